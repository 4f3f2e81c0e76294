//! `${VAR}` interpolation of config strings from the environment.
//!
//! Grammar: `$$` is a literal `$`; `${NAME}`, `${NAME:-default}` (default when unset or empty),
//! `${NAME-default}` (default when unset) and `${NAME:?message}` (error when unset or empty).
//! Anything else that starts with `$` passes through unchanged, so shell scripts given to
//! `sh -c` keep `$i`, `$((i+1))` and `$(cmd)`.

/// Why a string could not be interpolated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterpolateError {
    /// `${NAME}` with NAME unset and no default.
    Unset(String),
    /// `${NAME:?message}` with NAME unset or empty.
    Required(String, String),
}

/// Expands `input` with `lookup` as the environment.
pub fn interpolate(
    input: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, InterpolateError> {
    if !input.contains('$') {
        return Ok(input.to_string());
    }
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        }
        match parse_reference(after) {
            Some((reference, consumed)) => {
                out.push_str(&reference.expand(lookup)?);
                rest = &after[consumed..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
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

impl Reference<'_> {
    fn expand(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, InterpolateError> {
        let value = lookup(self.name);
        match (&self.operator, value) {
            (Operator::Plain, Some(v)) => Ok(v),
            (Operator::Plain, None) => Err(InterpolateError::Unset(self.name.to_string())),
            (Operator::DefaultIfUnsetOrEmpty(d), v) => {
                Ok(v.filter(|v| !v.is_empty()).unwrap_or_else(|| d.to_string()))
            }
            (Operator::DefaultIfUnset(d), v) => Ok(v.unwrap_or_else(|| d.to_string())),
            (Operator::Required(msg), v) => match v.filter(|v| !v.is_empty()) {
                Some(v) => Ok(v),
                None => Err(InterpolateError::Required(
                    self.name.to_string(),
                    msg.to_string(),
                )),
            },
        }
    }
}

/// Parses `{NAME…}` at the start of `s` (the text after a `$`); returns the reference and the
/// bytes consumed, or `None` when it is not our syntax (then the `$` passes through).
fn parse_reference(s: &str) -> Option<(Reference<'_>, usize)> {
    let body_start = 1;
    if !s.starts_with('{') {
        return None;
    }
    let close = s.find('}')?;
    let body = &s[body_start..close];
    let name_len = body
        .char_indices()
        .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
        .map_or(body.len(), |(i, _)| i);
    if name_len == 0 {
        return None;
    }
    let name = &body[..name_len];
    let tail = &body[name_len..];
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
    Some((Reference { name, operator }, close + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "PORT" => Some("9000".into()),
            "EMPTY" => Some(String::new()),
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
        assert_eq!(run("${unterminated").unwrap(), "${unterminated");
        assert_eq!(run("${1}").unwrap(), "${1}");
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
    }
}
