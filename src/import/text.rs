//! A value after supervisord's expansions: literal text, and references only known when
//! ctrlinit starts (the container's environment, the instance number), written in ctrlinit's
//! interpolation syntax. Literal `$` signs are doubled where ctrlinit would otherwise read them
//! as the start of a reference.

/// One piece of a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text as written (after `%%` and the static expansions).
    Lit(String),
    /// `${NAME}`: the container's environment variable NAME, read when ctrlinit loads.
    Env(String),
}

/// A value: pieces in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text(pub Vec<Piece>);

/// The first placeholder character: a private-use code point, never in real text.
const PLACEHOLDER_BASE: u32 = 0xF0000;
/// How many references one value may hold (far beyond any real one).
const PLACEHOLDER_COUNT: u32 = 0xFFFD;

/// Whether `c` stands for a reference in [`Text::with_placeholders`].
pub fn is_placeholder(c: char) -> bool {
    (PLACEHOLDER_BASE..PLACEHOLDER_BASE + PLACEHOLDER_COUNT).contains(&(c as u32))
}

impl Text {
    /// Literal text.
    pub fn lit(s: &str) -> Self {
        Text(vec![Piece::Lit(s.to_string())])
    }

    /// Appends literal text.
    pub fn push_str(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if let Some(Piece::Lit(last)) = self.0.last_mut() {
            last.push_str(s);
        } else {
            self.0.push(Piece::Lit(s.to_string()));
        }
    }

    /// Appends a piece.
    pub fn push(&mut self, piece: Piece) {
        match piece {
            Piece::Lit(s) => self.push_str(&s),
            other => self.0.push(other),
        }
    }

    /// Appends every piece of `other`.
    pub fn extend(&mut self, other: &Text) {
        for p in &other.0 {
            self.push(p.clone());
        }
    }

    /// Whether it holds no reference.
    pub fn is_static(&self) -> bool {
        self.0.iter().all(|p| matches!(p, Piece::Lit(_)))
    }

    /// The literal text, when it is all literal.
    pub fn as_static(&self) -> Option<String> {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Lit(s) => out.push_str(s),
                _ => return None,
            }
        }
        Some(out)
    }

    /// The names of the environment variables it refers to.
    pub fn env_names(&self) -> Vec<&str> {
        self.0
            .iter()
            .filter_map(|p| match p {
                Piece::Env(n) => Some(n.as_str()),
                Piece::Lit(_) => None,
            })
            .collect()
    }

    /// The text with each reference replaced by a placeholder character, for splitting; the
    /// references in placeholder order.
    pub fn with_placeholders(&self) -> (String, Vec<Piece>) {
        let mut s = String::new();
        let mut refs = Vec::new();
        for p in &self.0 {
            match p {
                Piece::Lit(l) => s.push_str(l),
                other => {
                    let n = refs.len() as u32;
                    // Beyond the range, a reference is dropped rather than misread.
                    if let Some(c) = char::from_u32(PLACEHOLDER_BASE + n.min(PLACEHOLDER_COUNT - 1))
                    {
                        s.push(c);
                        refs.push(other.clone());
                    }
                }
            }
        }
        (s, refs)
    }

    /// A split word back as a value: each placeholder replaced by its reference.
    pub fn from_placeholders(s: &str, refs: &[Piece]) -> Self {
        let mut t = Text::default();
        for c in s.chars() {
            if is_placeholder(c) {
                let i = (c as u32 - PLACEHOLDER_BASE) as usize;
                if let Some(r) = refs.get(i) {
                    t.push(r.clone());
                }
            } else {
                let mut buf = [0u8; 4];
                t.push_str(c.encode_utf8(&mut buf));
            }
        }
        t
    }

    /// As ctrlinit reads it: `${NAME}` for references, and a literal `$` doubled where it is
    /// followed by `{` or `$` (including the `$` of a reference that follows it), so that it
    /// stays a `$`.
    pub fn to_ctrlinit(&self) -> String {
        let mut out = String::new();
        for (i, p) in self.0.iter().enumerate() {
            match p {
                Piece::Env(name) => {
                    out.push_str("${");
                    out.push_str(name);
                    out.push('}');
                }
                Piece::Lit(s) => {
                    let next_is_ref = self
                        .0
                        .get(i + 1)
                        .is_some_and(|n| !matches!(n, Piece::Lit(_)));
                    let chars: Vec<char> = s.chars().collect();
                    for (j, &c) in chars.iter().enumerate() {
                        out.push(c);
                        if c != '$' {
                            continue;
                        }
                        let next = chars.get(j + 1).copied();
                        let doubled = match next {
                            Some(n) => n == '{' || n == '$',
                            None => next_is_ref,
                        };
                        if doubled {
                            out.push('$');
                        }
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::interpolate;

    fn env(name: &str) -> Option<String> {
        (name == "PORT").then(|| "9000".to_string())
    }

    #[test]
    fn dollars_survive_ctrlinit_interpolation() {
        for literal in [
            "$", "$$", "a$b", "${x}", "$${x}", "$$$", "cost $5", "x$", "${", "$}{",
        ] {
            let t = Text::lit(literal);
            let written = t.to_ctrlinit();
            assert_eq!(interpolate(&written, &env).unwrap(), literal, "{written}");
        }
        // A literal `$` right before a reference.
        let t = Text(vec![Piece::Lit("a$".into()), Piece::Env("PORT".into())]);
        assert_eq!(t.to_ctrlinit(), "a$$${PORT}");
        assert_eq!(interpolate(&t.to_ctrlinit(), &env).unwrap(), "a$9000");
        // Shell scripts keep their `$i` readable.
        assert_eq!(
            Text::lit("echo $i $(date)").to_ctrlinit(),
            "echo $i $(date)"
        );
    }

    #[test]
    fn placeholders_round_trip() {
        let t = Text(vec![
            Piece::Lit("--port=".into()),
            Piece::Env("PORT".into()),
            Piece::Lit(" x".into()),
        ]);
        let (s, refs) = t.with_placeholders();
        assert_eq!(s.chars().filter(|&c| is_placeholder(c)).count(), 1);
        assert_eq!(Text::from_placeholders(&s, &refs), t);
    }
}
