//! `${VAR}` interpolation of config strings from the environment.
//!
//! Grammar: `$$` is a literal `$`; `${NAME}`, `${NAME:-default}` (default when unset or empty),
//! `${NAME-default}` (default when unset) and `${NAME:?message}` (error when unset or empty).
//! A default may itself hold references (`${A:-${B:-x}}`), expanded only when it is used.
//! Anything else that starts with `$` passes through unchanged, so shell scripts given to
//! `sh -c` keep `$i`, `$((i+1))` and `$(cmd)`; a `${` that is never closed is an error, since
//! it is always a typo for one of ours or the shell's.

/// How deep defaults may nest (`${A:-${B:-${C}}}` is 3): a bound on recursion, far beyond use.
const MAX_DEPTH: usize = 16;

/// Why a string could not be interpolated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterpolateError {
    /// `${NAME}` with NAME unset and no default.
    Unset(String),
    /// `${NAME:?message}` with NAME unset or empty (the message may be empty).
    Required(String, String),
    /// A `${` with no `}` to close it, at this character column (1-based) of the value.
    Unterminated(usize),
    /// Defaults nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// Expands `input` with `lookup` as the environment.
pub fn interpolate(
    input: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, InterpolateError> {
    if !input.contains('$') {
        return Ok(input.to_string());
    }
    expand(input, lookup, 0).map_err(|e| match e {
        Failure::At(offset) => InterpolateError::Unterminated(column(input, offset)),
        Failure::Other(e) => e,
    })
}

/// A failure inside `expand`; an unterminated reference carries its byte offset, turned into a
/// column of the whole value at the top.
enum Failure {
    At(usize),
    Other(InterpolateError),
}

fn column(s: &str, offset: usize) -> usize {
    s[..offset.min(s.len())].chars().count() + 1
}

fn expand(
    input: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    depth: usize,
) -> Result<String, Failure> {
    if depth > MAX_DEPTH {
        return Err(Failure::Other(InterpolateError::TooDeep));
    }
    let mut out = String::with_capacity(input.len());
    let mut at = 0;
    while let Some(pos) = input[at..].find('$') {
        let dollar = at + pos;
        out.push_str(&input[at..dollar]);
        let after = &input[dollar + 1..];
        if after.starts_with('$') {
            out.push('$');
            at = dollar + 2;
            continue;
        }
        if !after.starts_with('{') {
            out.push('$');
            at = dollar + 1;
            continue;
        }
        let Some(close) = closing_brace(after) else {
            return Err(Failure::At(dollar));
        };
        let body = &after[1..close];
        match Reference::parse(body) {
            Some(reference) => {
                let value = reference.expand(lookup, depth).map_err(|e| match e {
                    // Offsets inside a default are relative to it: point at this reference.
                    Failure::At(_) => Failure::At(dollar),
                    other => other,
                })?;
                out.push_str(&value);
            }
            // Not a name of ours (`${#i}`, `${1}`): the shell's, passed through whole.
            None => out.push_str(&input[dollar..dollar + 1 + close + 1]),
        }
        at = dollar + 1 + close + 1;
    }
    out.push_str(&input[at..]);
    Ok(out)
}

/// The index in `s` (which starts with `{`) of the `}` closing it, counting nested `${`.
fn closing_brace(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut depth = 0usize;
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'$' if bytes.get(i + 1) == Some(&b'$') => i += 2,
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                depth += 1;
                i += 2;
            }
            b'}' if depth == 0 => return Some(i),
            b'}' => {
                depth -= 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// A parsed `${…}` reference.
struct Reference<'a> {
    name: &'a str,
    operator: Operator<'a>,
}

enum Operator<'a> {
    Plain,
    DefaultIfUnsetOrEmpty(&'a str),
    DefaultIfUnset(&'a str),
    Required(&'a str),
}

impl<'a> Reference<'a> {
    /// The reference in `body` (what is between the braces), or `None` when it is not ours.
    fn parse(body: &'a str) -> Option<Self> {
        let name_len = body
            .char_indices()
            .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
            .map_or(body.len(), |(i, _)| i);
        if name_len == 0 {
            return None;
        }
        let (name, tail) = body.split_at(name_len);
        let operator = if tail.is_empty() {
            Operator::Plain
        } else if let Some(d) = tail.strip_prefix(":-") {
            Operator::DefaultIfUnsetOrEmpty(d)
        } else if let Some(m) = tail.strip_prefix(":?") {
            Operator::Required(m)
        } else if let Some(d) = tail.strip_prefix('-') {
            Operator::DefaultIfUnset(d)
        } else {
            return None;
        };
        Some(Reference { name, operator })
    }

    fn expand(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
        depth: usize,
    ) -> Result<String, Failure> {
        let value = lookup(self.name);
        let default = |d: &str| expand(d, lookup, depth + 1);
        match (&self.operator, value) {
            (Operator::Plain, Some(v)) => Ok(v),
            (Operator::Plain, None) => Err(Failure::Other(InterpolateError::Unset(
                self.name.to_string(),
            ))),
            (Operator::DefaultIfUnsetOrEmpty(d), v) => match v.filter(|v| !v.is_empty()) {
                Some(v) => Ok(v),
                None => default(d),
            },
            (Operator::DefaultIfUnset(d), v) => match v {
                Some(v) => Ok(v),
                None => default(d),
            },
            (Operator::Required(msg), v) => match v.filter(|v| !v.is_empty()) {
                Some(v) => Ok(v),
                None => Err(Failure::Other(InterpolateError::Required(
                    self.name.to_string(),
                    msg.to_string(),
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "PORT" => Some("9000".into()),
            "EMPTY" => Some(String::new()),
            "HOME" => Some("/root".into()),
            _ => None,
        }
    }

    fn run(s: &str) -> Result<String, InterpolateError> {
        interpolate(s, &env)
    }

    #[test]
    fn expands_set_variables_and_defaults() {
        assert_eq!(run("--port=${PORT}").unwrap(), "--port=9000");
        assert_eq!(run("${NOPE:-8080}").unwrap(), "8080");
        assert_eq!(run("${PORT:-8080}").unwrap(), "9000");
        assert_eq!(run("${EMPTY:-x}").unwrap(), "x");
        assert_eq!(run("${EMPTY-x}").unwrap(), "");
        assert_eq!(run("${NOPE-x}").unwrap(), "x");
        assert_eq!(run("${NOPE:-}").unwrap(), "");
    }

    #[test]
    fn defaults_nest_in_full() {
        // Once `/root}`: the first `}` closed the outer reference.
        assert_eq!(run("${HOME:-${X}}").unwrap(), "/root");
        assert_eq!(run("${NOPE:-${PORT}}").unwrap(), "9000");
        assert_eq!(run("${NOPE:-${NADA:-${PORT}}}/x").unwrap(), "9000/x");
        assert_eq!(run("${NOPE:-a${PORT}b}").unwrap(), "a9000b");
        // A default is expanded only when used: an unset variable in an unused one is fine.
        assert_eq!(run("${PORT:-${UNSET}}").unwrap(), "9000");
        assert_eq!(
            run("${NOPE:-${UNSET}}"),
            Err(InterpolateError::Unset("UNSET".into()))
        );
        let deep = format!("{}x{}", "${A:-".repeat(20), "}".repeat(20));
        assert_eq!(run(&deep), Err(InterpolateError::TooDeep));
    }

    #[test]
    fn dollar_dollar_is_a_literal_dollar() {
        assert_eq!(
            run("cost: $$5 and $${PORT}").unwrap(),
            "cost: $5 and ${PORT}"
        );
    }

    #[test]
    fn other_dollars_pass_through() {
        let script = "i=0; while true; do i=$((i+1)); echo $i $(date) ${#i}; done";
        assert_eq!(run(script).unwrap(), script);
        assert_eq!(run("trailing $").unwrap(), "trailing $");
        assert_eq!(run("${1}").unwrap(), "${1}");
    }

    #[test]
    fn an_unterminated_reference_is_an_error_with_its_column() {
        assert_eq!(
            run("${unterminated"),
            Err(InterpolateError::Unterminated(1))
        );
        assert_eq!(run("ab ${PORT"), Err(InterpolateError::Unterminated(4)));
        assert_eq!(
            run("é ${NOPE:-${X}"),
            Err(InterpolateError::Unterminated(3))
        );
    }

    #[test]
    fn unset_without_default_is_an_error() {
        assert_eq!(run("${NOPE}"), Err(InterpolateError::Unset("NOPE".into())));
        assert_eq!(
            run("${NOPE:?set NOPE to the db url}"),
            Err(InterpolateError::Required(
                "NOPE".into(),
                "set NOPE to the db url".into()
            ))
        );
        assert_eq!(
            run("${EMPTY:?must not be empty}"),
            Err(InterpolateError::Required(
                "EMPTY".into(),
                "must not be empty".into()
            ))
        );
        assert_eq!(
            run("${NOPE:?}"),
            Err(InterpolateError::Required("NOPE".into(), String::new()))
        );
    }
}
