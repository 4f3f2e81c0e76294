//! `environment = KEY="val",KEY2=val2`: split as supervisord's `dict_of_key_value_pairs` does
//! (its shlex lexer, then `KEY = VALUE` triples, whatever separates them), keeping the parts
//! only known at start as references.

use super::shlex::{ENVIRONMENT, tokens};
use super::text::Text;

/// The pairs in order (a key given twice keeps its last value, in its first place).
pub fn key_value_pairs(value: &Text) -> Result<Vec<(String, Text)>, String> {
    let (s, refs) = value.with_placeholders();
    let toks =
        tokens(&s, ENVIRONMENT).map_err(|e| format!("{} in {:?}", e.message(), printable(&s)))?;
    let mut out: Vec<(String, Text)> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let triple = &toks[i..(i + 3).min(toks.len())];
        if triple.len() != 3 || triple[1].text != "=" {
            return Err(format!(
                "unexpected end of key/value pairs in {:?} (write KEY=value,KEY2=\"value 2\")",
                printable(&s)
            ));
        }
        let key = Text::from_placeholders(&triple[0].text, &refs);
        let Some(key) = key.as_static() else {
            return Err(
                "a variable's name comes from the environment, which the import cannot read".into(),
            );
        };
        let val = Text::from_placeholders(&triple[2].text, &refs);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some(existing) => existing.1 = val,
            None => out.push((key, val)),
        }
        i += 4;
    }
    Ok(out)
}

/// The value with placeholders shown as `…` (for messages).
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if super::text::is_placeholder(c) {
                '…'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::text::Piece;

    fn pairs(s: &str) -> Vec<(String, String)> {
        key_value_pairs(&Text::lit(s))
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k, v.to_ctrlinit()))
            .collect()
    }

    #[test]
    fn pairs_as_supervisord_reads_them() {
        let p = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(pairs(r#"A="a,b",B=c"#), vec![p("A", "a,b"), p("B", "c")]);
        assert_eq!(pairs("A='x y' , B=2"), vec![p("A", "x y"), p("B", "2")]);
        assert_eq!(
            pairs("PATH=/usr/bin:/bin,HOME=/root"),
            vec![p("PATH", "/usr/bin:/bin"), p("HOME", "/root")]
        );
        assert_eq!(pairs("\n  A=1,\n  B=2"), vec![p("A", "1"), p("B", "2")]);
        assert_eq!(pairs("A=1,A=2"), vec![p("A", "2")]);
        assert_eq!(pairs(r#"K="""#), vec![p("K", "")]);
        assert!(key_value_pairs(&Text::lit("A=a@b")).is_err());
        assert!(key_value_pairs(&Text::lit("A=")).is_err());
        assert!(key_value_pairs(&Text::lit("A=\"open")).is_err());
    }

    #[test]
    fn references_stay_in_their_value() {
        let t = Text(vec![
            Piece::Lit("NAME=\"".into()),
            Piece::Env("POD".into()),
            Piece::Lit("-w1\",X=y".into()),
        ]);
        let got: Vec<(String, String)> = key_value_pairs(&t)
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k, v.to_ctrlinit()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("NAME".into(), "${POD}-w1".into()),
                ("X".into(), "y".into())
            ]
        );
    }
}
