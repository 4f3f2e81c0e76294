//! `${VAR}` interpolation reaching the real argv and environment of a program, and shell `$`
//! syntax in `sh -c` scripts passing through untouched.

mod common;

use common::*;

#[test]
fn variables_defaults_and_dollar_dollar_reach_argv() {
    let init = init()
        .env("CTRLINIT_T_SET", "from-env")
        .env("CTRLINIT_T_EMPTY", "")
        .file(
            "a.toml",
            r#"
[program.argv]
type = "oneshot"
command = [
  "/bin/sh", "-c", "for a in \"$@\"; do printf '%s\n' \"$a\"; done > {dir}/argv.tmp; mv {dir}/argv.tmp {dir}/argv",
  "sh",
  "${CTRLINIT_T_SET}",
  "--port=${CTRLINIT_T_UNSET_PORT:-8080}",
  "${CTRLINIT_T_EMPTY:-empty-means-default}",
  "[${CTRLINIT_T_EMPTY-kept-empty}]",
  "cost: $$5",
  "$${CTRLINIT_T_SET}",
  "$HOME and $1 stay",
  "pre-${CTRLINIT_T_SET}-post",
  "${CTRLINIT_T_UNSET:-${CTRLINIT_T_SET}}",
  "${CTRLINIT_T_SET:-${CTRLINIT_T_UNSET}}",
]

[program.envcheck]
type = "oneshot"
command = ["/bin/sh", "-c", "printf '%s\n%s\n' \"$GREETING\" \"$LITERAL\" > {dir}/env.tmp; mv {dir}/env.tmp {dir}/env"]
env = { GREETING = "hello ${CTRLINIT_T_SET}", LITERAL = "$${NOT_EXPANDED}" }
"#,
        )
        .start();
    let argv = wait_for_file(&init.dir().join("argv"));
    let argv: Vec<&str> = argv.lines().collect();
    assert_eq!(
        argv,
        vec![
            "from-env",
            "--port=8080",
            "empty-means-default",
            "[]",
            "cost: $5",
            "${CTRLINIT_T_SET}",
            "$HOME and $1 stay",
            "pre-from-env-post",
            // Nested defaults expand in full (this was `from-env}` once).
            "from-env",
            "from-env",
        ]
    );
    let env = wait_for_file(&init.dir().join("env"));
    assert_eq!(
        env.lines().collect::<Vec<_>>(),
        vec!["hello from-env", "${NOT_EXPANDED}"]
    );
    init.wait_for_line("argv: starting -> completed: exit status 0");
}

#[test]
fn shell_dollar_syntax_in_sh_c_scripts_passes_through() {
    let init = init()
        .env("CTRLINIT_T_N", "3")
        .file(
            "a.toml",
            r#"
[program.script]
type = "oneshot"
command = ["/bin/sh", "-c", "i=${CTRLINIT_T_N}; j=$((i+1)); k=$(echo sub); echo \"$i $j $k ${#k} $((i*j))\" > {dir}/out.tmp; mv {dir}/out.tmp {dir}/out"]
"#,
        )
        .start();
    // ${CTRLINIT_T_N} is ctrlinit's; $((i+1)), $(echo sub), ${#k} and $i are the shell's.
    let out = wait_for_file(&init.dir().join("out"));
    assert_eq!(out.trim(), "3 4 sub 3 12");
}

#[test]
fn string_command_is_interpolated_then_split() {
    let init = init()
        .env("CTRLINIT_T_WORD", "two words")
        .file(
            "a.toml",
            r#"
[program.split]
type = "oneshot"
command = "/bin/sh -c 'printf \"%s|\" \"$@\" > {dir}/out.tmp; mv {dir}/out.tmp {dir}/out' sh '${CTRLINIT_T_WORD}' ${CTRLINIT_T_MISSING:-x}"
"#,
        )
        .start();
    let out = wait_for_file(&init.dir().join("out"));
    assert_eq!(out, "two words|x|");
}
