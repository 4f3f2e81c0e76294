//! Properties over inputs a config is made of (issue 13): program names, which become file names
//! and prefixes, and `${…}` interpolation, which every string goes through.

use std::path::Path;

use ctrlinit::config::interpolate;
use ctrlinit::config::names::{MAX_NAME, valid_name};
use proptest::prelude::*;

/// The rules, written again the plain way, to hold the implementation to.
fn by_the_rules(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c))
        && name != "."
        && name != ".."
        && name != "ctrlinit"
}

fn env(name: &str) -> Option<String> {
    match name {
        "SET" => Some("value".into()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

proptest! {
    #[test]
    fn names_follow_the_rules(name in "\\PC{0,80}|[a-z0-9_.-]{0,70}|\\.{1,3}|ctrlinit") {
        prop_assert_eq!(valid_name(&name), by_the_rules(&name));
    }

    #[test]
    fn a_valid_name_never_leaves_its_directory(name in "[a-z0-9_.-]{1,64}") {
        prop_assume!(valid_name(&name));
        let log_dir = Path::new("/var/log/ctrlinit");
        let file = log_dir.join(format!("{name}.log"));
        prop_assert_eq!(file.parent(), Some(log_dir));
        let crash = Path::new("/var/crash/ctrlinit").join(&name);
        prop_assert_eq!(crash.parent(), Some(Path::new("/var/crash/ctrlinit")));
        prop_assert_eq!(crash.components().count(), 5);
    }

    #[test]
    fn strings_without_a_dollar_are_left_alone(s in "[^$]{0,200}") {
        prop_assert_eq!(interpolate(&s, &env).unwrap(), s);
    }

    #[test]
    fn doubling_every_dollar_gives_the_string_back(s in "\\PC{0,200}") {
        let escaped = s.replace('$', "$$");
        prop_assert_eq!(interpolate(&escaped, &env).unwrap(), s);
    }

    #[test]
    fn defaults_nest_in_full(a in "[^${}]{0,40}", b in "[^${}]{0,40}") {
        let nested = format!("${{UNSET:-{a}${{NADA:-{b}}}}}");
        prop_assert_eq!(interpolate(&nested, &env).unwrap(), format!("{a}{b}"));
        let set = format!("${{SET:-{a}${{NADA:-{b}}}}}");
        prop_assert_eq!(interpolate(&set, &env).unwrap(), "value");
        let empty = format!("${{EMPTY-{a}}}");
        prop_assert_eq!(interpolate(&empty, &env).unwrap(), "");
    }

    #[test]
    fn any_string_interpolates_or_errs_without_panicking(s in "(\\PC|\\$|\\{|\\}|:-|:\\?){0,120}") {
        let _ = interpolate(&s, &env);
    }
}
