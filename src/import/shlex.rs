//! Python's `shlex` in POSIX mode, which supervisord splits with: `shlex.split` for `command`,
//! and a `shlex.shlex` lexer with `/.+-():` added to its word characters for `environment`
//! (`KEY="val",KEY2=val2`). Ported state for state, so a value splits here as it did there.
//!
//! Parts of a value that are only known at start (`%(ENV_X)s` of the container's environment)
//! are given as placeholder characters (see [`super::text`]), which count as word characters:
//! they stay in the word they were written in.

use super::text::is_placeholder;

/// How the lexer is set up.
#[derive(Debug, Clone, Copy)]
pub struct Mode {
    /// `whitespace_split` (`shlex.split`): only whitespace ends a word. Otherwise a character
    /// that is not a word character is a token of its own.
    pub whitespace_split: bool,
    /// `#` starts a comment to the end of the line (`shlex.shlex`'s default; `shlex.split`
    /// turns it off).
    pub comments: bool,
    /// Extra word characters (supervisord adds `/.+-():` for `environment`).
    pub extra_wordchars: &'static str,
}

/// `shlex.split(s)`.
pub const SPLIT: Mode = Mode {
    whitespace_split: true,
    comments: false,
    extra_wordchars: "",
};

/// supervisord's `environment` lexer.
pub const ENVIRONMENT: Mode = Mode {
    whitespace_split: false,
    comments: true,
    extra_wordchars: "/.+-():",
};

/// A token, and whether any of it was quoted (a quoted token can be empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// Its characters, quotes and escapes removed.
    pub text: String,
    /// Whether a quote was part of it.
    pub quoted: bool,
    /// The placeholders that were outside quotes in it.
    pub bare_placeholders: Vec<char>,
}

/// Why a value could not be split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitError {
    /// A quote is never closed.
    NoClosingQuotation,
    /// The value ends with a backslash.
    NoEscapedCharacter,
}

impl SplitError {
    /// Python's message.
    pub fn message(self) -> &'static str {
        match self {
            SplitError::NoClosingQuotation => "No closing quotation",
            SplitError::NoEscapedCharacter => "No escaped character",
        }
    }
}

/// Python's word characters in POSIX mode.
fn is_wordchar(c: char, mode: Mode) -> bool {
    c.is_ascii_alphanumeric()
        || c == '_'
        || "ßàáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞ".contains(c)
        || mode.extra_wordchars.contains(c)
        || is_placeholder(c)
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_quote(c: char) -> bool {
    c == '\'' || c == '"'
}

/// States of Python's `read_token`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between tokens.
    Space,
    /// In a word.
    Word,
    /// Inside this quote.
    Quote(char),
    /// After a backslash; the state to return to.
    Escape(EscapeFrom),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EscapeFrom {
    Word,
    Quote(char),
}

/// Splits `s` as Python's lexer in `mode` would.
pub fn tokens(s: &str, mode: Mode) -> Result<Vec<Token>, SplitError> {
    let mut lexer = Lexer {
        chars: s.chars().collect(),
        at: 0,
        mode,
        state: State::Space,
        pushback: None,
    };
    let mut out = Vec::new();
    loop {
        let (token, ended) = lexer.read_token()?;
        if token.any() {
            out.push(Token {
                text: token.text,
                quoted: token.quoted,
                bare_placeholders: token.bare,
            });
        }
        if ended {
            return Ok(out);
        }
    }
}

/// Python's lexer over one value: where it is, in which state.
struct Lexer {
    chars: Vec<char>,
    at: usize,
    mode: Mode,
    state: State,
    /// A character read but not used yet (Python's pushback).
    pushback: Option<char>,
}

/// The token being read.
#[derive(Default)]
struct Partial {
    text: String,
    quoted: bool,
    bare: Vec<char>,
}

impl Partial {
    /// Whether there is a token (a quoted one may be empty).
    fn any(&self) -> bool {
        !self.text.is_empty() || self.quoted
    }

    /// A word character outside quotes.
    fn push_word(&mut self, c: char) {
        self.text.push(c);
        if is_placeholder(c) {
            self.bare.push(c);
        }
    }

    /// The token ends here if there is one; otherwise reading goes on.
    fn ends(&self) -> Step {
        if self.any() {
            Step::TokenEnds
        } else {
            Step::More
        }
    }
}

/// What one character did.
enum Step {
    /// Keep reading this token.
    More,
    /// The token is complete.
    TokenEnds,
    /// The input is over.
    InputEnds,
}

impl Lexer {
    fn next_char(&mut self) -> Option<char> {
        if let Some(c) = self.pushback.take() {
            return Some(c);
        }
        let c = self.chars.get(self.at).copied();
        if c.is_some() {
            self.at += 1;
        }
        c
    }

    /// Python's `read_token`: the next token, and whether the input ended after it.
    fn read_token(&mut self) -> Result<(Partial, bool), SplitError> {
        let mut token = Partial::default();
        loop {
            let next = self.next_char();
            let step = match self.state {
                State::Space => self.space(next, &mut token),
                State::Quote(q) => self.quote(q, next, &mut token)?,
                State::Escape(from) => self.escape(from, next, &mut token)?,
                State::Word => self.word(next, &mut token),
            };
            match step {
                Step::More => {}
                Step::TokenEnds => return Ok((token, false)),
                Step::InputEnds => return Ok((token, true)),
            }
        }
    }

    fn space(&mut self, next: Option<char>, token: &mut Partial) -> Step {
        let mode = self.mode;
        match next {
            None => return Step::InputEnds,
            Some(c) if is_whitespace(c) => return token.ends(),
            Some('#') if mode.comments => skip_line(&self.chars, &mut self.at),
            Some('\\') => self.state = State::Escape(EscapeFrom::Word),
            Some(c) if is_wordchar(c, mode) => {
                token.push_word(c);
                self.state = State::Word;
            }
            Some(c) if is_quote(c) => self.state = State::Quote(c),
            Some(c) if mode.whitespace_split => {
                token.text.push(c);
                self.state = State::Word;
            }
            Some(c) => {
                // A character of its own.
                token.text.push(c);
                return Step::TokenEnds;
            }
        }
        Step::More
    }

    fn quote(
        &mut self,
        q: char,
        next: Option<char>,
        token: &mut Partial,
    ) -> Result<Step, SplitError> {
        token.quoted = true;
        match next {
            None => return Err(SplitError::NoClosingQuotation),
            Some(c) if c == q => self.state = State::Word,
            Some('\\') if q == '"' => self.state = State::Escape(EscapeFrom::Quote(q)),
            Some(c) => token.text.push(c),
        }
        Ok(Step::More)
    }

    fn escape(
        &mut self,
        from: EscapeFrom,
        next: Option<char>,
        token: &mut Partial,
    ) -> Result<Step, SplitError> {
        let Some(c) = next else {
            return Err(SplitError::NoEscapedCharacter);
        };
        // In double quotes only the quote and the backslash are escaped.
        if let EscapeFrom::Quote(q) = from
            && c != q
            && c != '\\'
        {
            token.text.push('\\');
        }
        token.text.push(c);
        self.state = match from {
            EscapeFrom::Word => State::Word,
            EscapeFrom::Quote(q) => State::Quote(q),
        };
        Ok(Step::More)
    }

    fn word(&mut self, next: Option<char>, token: &mut Partial) -> Step {
        let mode = self.mode;
        match next {
            None => Step::InputEnds,
            Some(c) if is_whitespace(c) => {
                self.state = State::Space;
                token.ends()
            }
            Some('#') if mode.comments => {
                skip_line(&self.chars, &mut self.at);
                self.state = State::Space;
                token.ends()
            }
            Some(c) if is_quote(c) => {
                self.state = State::Quote(c);
                Step::More
            }
            Some('\\') => {
                self.state = State::Escape(EscapeFrom::Word);
                Step::More
            }
            Some(c) if is_wordchar(c, mode) || mode.whitespace_split => {
                token.push_word(c);
                Step::More
            }
            Some(c) => {
                self.pushback = Some(c);
                self.state = State::Space;
                token.ends()
            }
        }
    }
}

/// Python's `readline()` after a comment character: up to and past the next newline.
fn skip_line(chars: &[char], at: &mut usize) {
    while let Some(&c) = chars.get(*at) {
        *at += 1;
        if c == '\n' {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<String> {
        tokens(s, SPLIT)
            .unwrap()
            .into_iter()
            .map(|t| t.text)
            .collect()
    }

    fn env(s: &str) -> Vec<String> {
        tokens(s, ENVIRONMENT)
            .unwrap()
            .into_iter()
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn splits_as_shlex_split() {
        // Python 3.11's shlex.split of the same strings.
        assert_eq!(split(r#"bash -c "echo 'x'""#), ["bash", "-c", "echo 'x'"]);
        assert_eq!(
            split(r#"a "b\$c" 'd\e' f\ g"#),
            ["a", r"b\$c", r"d\e", "f g"]
        );
        assert_eq!(split(r##"a#b "#c" #d"##), ["a#b", "#c", "#d"]);
        assert_eq!(split(r#"x """#), ["x", ""]);
        assert!(split("").is_empty());
        assert_eq!(split(r#"a"b c"d"#), ["ab cd"]);
        assert_eq!(tokens("'open", SPLIT), Err(SplitError::NoClosingQuotation));
        assert_eq!(tokens(r"end\", SPLIT), Err(SplitError::NoEscapedCharacter));
    }

    #[test]
    fn lexes_environment_as_supervisord() {
        // The tokens of Python 3.11's shlex.shlex(s, posix=True) with '/.+-():' added.
        assert_eq!(env(r#"K="",K2=x"#), ["K", "=", "", ",", "K2", "=", "x"]);
        assert_eq!(env(r#"A="a,b",B=c"#), ["A", "=", "a,b", ",", "B", "=", "c"]);
        assert_eq!(env("A='x y' , B=2"), ["A", "=", "x y", ",", "B", "=", "2"]);
        assert_eq!(env("A=a@b"), ["A", "=", "a", "@", "b"]);
        assert_eq!(env("A=1#c,B=2"), ["A", "=", "1"]);
        assert_eq!(
            env(r#"A=x\ y,B="q\"r\$""#),
            ["A", "=", "x y", ",", "B", "=", r#"q"r\$"#]
        );
        assert_eq!(env("A=é,B=中"), ["A", "=", "é", ",", "B", "=", "中"]);
        assert_eq!(env(r#"A=a"b c"d"#), ["A", "=", "ab cd"]);
        assert_eq!(env("PATH=/usr/bin:/bin"), ["PATH", "=", "/usr/bin:/bin"]);
    }
}
