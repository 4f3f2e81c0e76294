//! supervisord's expansions: a value is a Python `%`-format string applied to a mapping
//! (`%(program_name)s`, `%(process_num)02d`, `%(ENV_HOME)s`, `%%`). What is known when importing
//! is written out (formatted as Python would); what is only known at start becomes a ctrlinit
//! reference (`${HOME}`, `${INSTANCE}`), and formatting it cannot carry (a width, zero padding)
//! is said.

use super::text::{Piece, Text};

/// One `%(key)…` conversion as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The mapping key.
    pub key: String,
    /// Flags among `-+ #0`.
    pub flags: String,
    /// Minimum width.
    pub width: Option<usize>,
    /// Precision.
    pub precision: Option<usize>,
    /// Conversion: `s`, `d`, `r` …
    pub conv: char,
    /// The conversion as written, for messages (`%(process_num)02d`).
    pub written: String,
}

impl Spec {
    /// Whether it writes its value as it is (`%(x)s`, `%(x)d`): no width, padding or precision.
    pub fn is_plain(&self) -> bool {
        self.flags.is_empty()
            && self.width.is_none()
            && self.precision.is_none()
            && matches!(self.conv, 's' | 'd' | 'i' | 'u')
    }
}

/// What a key stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string known now.
    Str(String),
    /// A number known now.
    Int(i64),
    /// A string, some or all of it known at start only (`${HOME}`).
    Text(Text),
    /// A number known at start only (`${INSTANCE}`).
    Later(Piece),
}

/// Why a value cannot be expanded: supervisord would refuse it too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// A `%` that does not start a conversion supervisord accepts.
    Format(String),
    /// A key the mapping does not hold.
    Unknown(String),
}

impl ExpandError {
    /// The error in a sentence; `names` lists what could have been used.
    pub fn message(&self, names: &str) -> String {
        match self {
            ExpandError::Format(m) => {
                format!("{m} (supervisord expands the value as a Python format string)")
            }
            ExpandError::Unknown(k) => {
                format!("%({k})s cannot be expanded here (names available: {names})")
            }
        }
    }
}

/// What expanding lost: conversions whose formatting a reference cannot keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    /// The conversion, as written.
    pub written: String,
    /// What ctrlinit writes instead.
    pub instead: String,
}

/// Parses `s` into literal text and conversions.
pub fn parse(s: &str) -> Result<Vec<Result<String, Spec>>, ExpandError> {
    let chars: Vec<char> = s.chars().collect();
    let mut out: Vec<Result<String, Spec>> = Vec::new();
    let mut lit = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '%' {
            lit.push(c);
            i += 1;
            continue;
        }
        match chars.get(i + 1) {
            Some('%') => {
                lit.push('%');
                i += 2;
                continue;
            }
            Some('(') => {}
            Some(_) => {
                return Err(ExpandError::Format(format!(
                    "`{}` at character {} is not %(name)s or %%",
                    chars[i..(i + 2).min(chars.len())]
                        .iter()
                        .collect::<String>(),
                    i + 1
                )));
            }
            None => {
                return Err(ExpandError::Format(format!(
                    "the value ends with a lone `%` (character {})",
                    i + 1
                )));
            }
        }
        let (spec, next) = conversion(&chars, i)?;
        if !lit.is_empty() {
            out.push(Ok(std::mem::take(&mut lit)));
        }
        out.push(Err(spec));
        i = next;
    }
    if !lit.is_empty() {
        out.push(Ok(lit));
    }
    Ok(out)
}

/// The `%(key)…c` conversion starting at `chars[start]` (a `%` followed by `(`), and the index
/// after it.
fn conversion(chars: &[char], start: usize) -> Result<(Spec, usize), ExpandError> {
    // The key: up to the matching `)`, parentheses nesting as Python counts them.
    let key_start = start + 2;
    let Some(key_end) = closing_paren(chars, key_start) else {
        return Err(ExpandError::Format(format!(
            "the `%(` at character {} is never closed",
            start + 1
        )));
    };
    let key: String = chars[key_start..key_end].iter().collect();
    let mut i = key_end + 1;
    let mut flags = String::new();
    while let Some(&f) = chars.get(i).filter(|f| "-+ #0".contains(**f)) {
        flags.push(f);
        i += 1;
    }
    let width = bounded(&digits(chars, &mut i), "width", start)?;
    let mut precision = None;
    if chars.get(i) == Some(&'.') {
        i += 1;
        precision = Some(bounded(&digits(chars, &mut i), "precision", start)?.unwrap_or(0));
    }
    // Length modifiers: Python accepts and ignores them.
    while chars.get(i).is_some_and(|c| "hlL".contains(*c)) {
        i += 1;
    }
    let Some(&conv) = chars.get(i) else {
        return Err(ExpandError::Format(format!(
            "`%({key})` at character {} has no conversion (write %({key})s)",
            start + 1
        )));
    };
    i += 1;
    if !"diouxXeEfFgGcrsa".contains(conv) {
        return Err(ExpandError::Format(format!(
            "unsupported format character {conv:?} in `%({key})…{conv}` at character {}",
            start + 1
        )));
    }
    let spec = Spec {
        key,
        flags,
        width,
        precision,
        conv,
        written: chars[start..i].iter().collect(),
    };
    Ok((spec, i))
}

/// The index of the `)` closing the `(` just before `from`, if any.
fn closing_paren(chars: &[char], from: usize) -> Option<usize> {
    let mut depth = 1;
    for (i, &c) in chars.iter().enumerate().skip(from) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The widest width or precision written out: a command line has no use for more, and a
/// larger one (`%(program_name)9999999999s`) would ask for that many bytes of padding.
pub const MAX_WIDTH: usize = 4096;

/// A width or precision (`what`) written as `digits`: `None` when none is written, an error
/// above [`MAX_WIDTH`].
fn bounded(digits: &str, what: &str, start: usize) -> Result<Option<usize>, ExpandError> {
    if digits.is_empty() {
        return Ok(None);
    }
    match digits.parse::<usize>() {
        Ok(n) if n <= MAX_WIDTH => Ok(Some(n)),
        _ => Err(ExpandError::Format(format!(
            "the {what} {digits} of the conversion at character {} is over {MAX_WIDTH}",
            start + 1
        ))),
    }
}

/// The ASCII digits at `chars[*i]` onwards (possibly none); `*i` moves past them.
fn digits(chars: &[char], i: &mut usize) -> String {
    let mut out = String::new();
    while let Some(&d) = chars.get(*i).filter(|d| d.is_ascii_digit()) {
        out.push(d);
        *i += 1;
    }
    out
}

/// Expands `s` with `lookup`; the lost formatting alongside.
pub fn expand(
    s: &str,
    lookup: &dyn Fn(&str) -> Option<Value>,
) -> Result<(Text, Vec<Lost>), ExpandError> {
    let mut text = Text::default();
    let mut lost = Vec::new();
    for part in parse(s)? {
        match part {
            Ok(l) => text.push_str(&l),
            Err(spec) => {
                let value =
                    lookup(&spec.key).ok_or_else(|| ExpandError::Unknown(spec.key.clone()))?;
                match value {
                    Value::Str(v) => text.push_str(&format_str(&v, &spec)?),
                    Value::Int(n) => text.push_str(&format_int(n, &spec)?),
                    Value::Text(t) => match t.as_static() {
                        Some(v) => text.push_str(&format_str(&v, &spec)?),
                        None => {
                            if !matches!(spec.conv, 's' | 'r' | 'a') {
                                return Err(ExpandError::Format(format!(
                                    "`{}` formats a string as a number",
                                    spec.written
                                )));
                            }
                            later(&mut text, &mut lost, &spec, &t);
                        }
                    },
                    Value::Later(piece) => later(&mut text, &mut lost, &spec, &Text(vec![piece])),
                }
            }
        }
    }
    Ok((text, lost))
}

/// A value known at start only: written as its references; formatting they cannot keep (a
/// width, padding, a precision) is lost and said.
fn later(text: &mut Text, lost: &mut Vec<Lost>, spec: &Spec, value: &Text) {
    let plain = spec.is_plain();
    if spec.conv == 'r' {
        text.push_str("'");
        text.extend(value);
        text.push_str("'");
    } else {
        text.extend(value);
    }
    if !plain {
        lost.push(Lost {
            written: spec.written.clone(),
            instead: value.to_ctrlinit(),
        });
    }
}

/// `%s` / `%r` of a string, with Python's width, precision and `-`.
fn format_str(v: &str, spec: &Spec) -> Result<String, ExpandError> {
    let body: String = match spec.conv {
        's' | 'a' => v.to_string(),
        'r' => python_repr(v),
        _ => {
            return Err(ExpandError::Format(format!(
                "`{}` formats {:?}, a string, as a number",
                spec.written, v
            )));
        }
    };
    let body: String = match spec.precision {
        Some(p) => body.chars().take(p).collect(),
        None => body,
    };
    Ok(pad(body, spec))
}

/// `%d` (and `%s`, `%x`, `%o`) of a number, with Python's flags and width.
fn format_int(n: i64, spec: &Spec) -> Result<String, ExpandError> {
    let alt = spec.flags.contains('#');
    let (sign, digits) = match spec.conv {
        's' | 'r' | 'a' => return Ok(pad(n.to_string(), spec)),
        'd' | 'i' | 'u' => (n < 0, n.unsigned_abs().to_string()),
        'x' => (
            n < 0,
            format!("{}{:x}", if alt { "0x" } else { "" }, n.unsigned_abs()),
        ),
        'X' => (
            n < 0,
            format!("{}{:X}", if alt { "0X" } else { "" }, n.unsigned_abs()),
        ),
        'o' => (
            n < 0,
            format!("{}{:o}", if alt { "0o" } else { "" }, n.unsigned_abs()),
        ),
        other => {
            return Err(ExpandError::Format(format!(
                "`{}`: ctrlinit import does not write the {other:?} conversion; use %d or %s",
                spec.written
            )));
        }
    };
    let digits = match spec.precision {
        Some(p) if digits.len() < p => format!("{}{digits}", "0".repeat(p - digits.len())),
        _ => digits,
    };
    let sign = if sign {
        "-"
    } else if spec.flags.contains('+') {
        "+"
    } else if spec.flags.contains(' ') {
        " "
    } else {
        ""
    };
    if spec.flags.contains('0')
        && !spec.flags.contains('-')
        && let Some(w) = spec.width
    {
        let len = sign.len() + digits.chars().count();
        if len < w {
            return Ok(format!("{sign}{}{digits}", "0".repeat(w - len)));
        }
    }
    Ok(pad(format!("{sign}{digits}"), spec))
}

fn pad(body: String, spec: &Spec) -> String {
    let Some(w) = spec.width else { return body };
    let len = body.chars().count();
    if len >= w {
        return body;
    }
    let fill = " ".repeat(w - len);
    if spec.flags.contains('-') {
        format!("{body}{fill}")
    } else {
        format!("{fill}{body}")
    }
}

/// Python's `repr` of a string (the common cases: quotes and backslashes).
fn python_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(k: &str) -> Option<Value> {
        match k {
            "a" => Some(Value::Str("xy".into())),
            "n" => Some(Value::Int(7)),
            "ENV_HOME" => Some(Value::Text(Text(vec![Piece::Env("HOME".into())]))),
            "process_num" => Some(Value::Later(Piece::Env("INSTANCE".into()))),
            _ => None,
        }
    }

    fn run(s: &str) -> String {
        expand(s, &lookup).unwrap().0.to_ctrlinit()
    }

    #[test]
    fn formats_as_python() {
        // Python 3.11: '%(a)5s|%(a)-5s|%(n)03d|%(n)+d|%(n) d|%(a).1s|%(n)r|%(a)r' % {...}
        assert_eq!(
            run("%(a)5s|%(a)-5s|%(n)03d|%(n)+d|%(n) d|%(a).1s|%(n)r|%(a)r"),
            "   xy|xy   |007|+7| 7|x|7|'xy'"
        );
        assert_eq!(run("50%% of %(a)s"), "50% of xy");
        assert_eq!(run("%(ENV_HOME)s/bin"), "${HOME}/bin");
    }

    #[test]
    fn lost_formatting_is_said() {
        let (t, lost) = expand("port 91%(process_num)02d", &lookup).unwrap();
        assert_eq!(t.to_ctrlinit(), "port 91${INSTANCE}");
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].written, "%(process_num)02d");
        // A string formatted as a number is refused, as Python refuses it.
        assert!(matches!(
            expand("%(ENV_HOME)d", &lookup),
            Err(ExpandError::Format(_))
        ));
    }

    #[test]
    fn what_supervisord_refuses_is_an_error() {
        assert!(matches!(
            expand("50%", &lookup),
            Err(ExpandError::Format(_))
        ));
        assert!(matches!(
            expand("date +%Y", &lookup),
            Err(ExpandError::Format(_))
        ));
        assert!(matches!(
            expand("%(a", &lookup),
            Err(ExpandError::Format(_))
        ));
        assert_eq!(
            expand("%(nope)s", &lookup),
            Err(ExpandError::Unknown("nope".into()))
        );
        assert!(matches!(
            expand("%(a)d", &lookup),
            Err(ExpandError::Format(_))
        ));
    }
}
