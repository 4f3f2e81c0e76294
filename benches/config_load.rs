//! Criterion: loading and validating a `conf.d/` of 50 programs (`ctrlinit::config::load_dir`).
//!
//! The directory is written once to a temp dir: five files of ten programs each, with the keys a
//! real image uses (dependencies in both forms, env interpolation, backoff, readiness, log
//! settings), so the bench covers parsing, typing, interpolation and the cross-file checks
//! (duplicates, dependency existence, cycle detection).
//!
//! Smoke mode (CI): `cargo bench --bench config_load -- --warm-up-time 0.1 --measurement-time 0.2`

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ctrlinit::config::{LoadOptions, load_dir};

const FILES: usize = 5;
const PER_FILE: usize = 10;

fn write_conf_d(dir: &std::path::Path) {
    std::fs::write(
        dir.join("00-init.toml"),
        "[init]\nstop_timeout = \"9s\"\nexit_code = 75\nlog_level = \"info\"\n",
    )
    .unwrap();
    for f in 0..FILES {
        let mut text = String::new();
        for j in 0..PER_FILE {
            let n = f * PER_FILE + j;
            let name = format!("svc{n:02}");
            writeln!(text, "[program.{name}]").unwrap();
            writeln!(
                text,
                "command = [\"/usr/bin/app-{n}\", \"--port\", \"${{PORT_{n}:-80{n:02}}}\", \"--name\", \"${{HOSTNAME}}\"]"
            )
            .unwrap();
            if n == 0 {
                writeln!(text, "type = \"oneshot\"").unwrap();
            } else if !n.is_multiple_of(7) {
                writeln!(text, "depends_on = [\"svc00\"]").unwrap();
            }
            writeln!(
                text,
                "backoff = {{ initial = \"250ms\", max = \"20s\", factor = 1.5 }}"
            )
            .unwrap();
            writeln!(text, "max_restarts = 10").unwrap();
            writeln!(text, "restart_window = \"2m\"").unwrap();
            writeln!(text, "stop_signal = \"SIGINT\"").unwrap();
            writeln!(text, "stop_timeout = \"3s\"").unwrap();
            writeln!(
                text,
                "env = {{ RUST_LOG = \"info\", APP_ID = \"{n}\", DATA = \"/srv/${{APP:-app}}/{n}\" }}"
            )
            .unwrap();
            if n.is_multiple_of(3) && n != 0 {
                writeln!(text, "ready = {{ tcp = \"127.0.0.1:{}\" }}", 8000 + n).unwrap();
                writeln!(text, "ready_timeout = \"30s\"").unwrap();
            }
            if n != 0 && n.is_multiple_of(7) {
                // Long form: wait for the oneshot, and for the previous service to be ready and
                // follow its restarts.
                writeln!(text, "[program.{name}.depends_on]").unwrap();
                writeln!(text, "svc00 = \"completed\"").unwrap();
                writeln!(
                    text,
                    "svc{:02} = {{ condition = \"ready\", restart = true }}",
                    n - 1
                )
                .unwrap();
            }
            writeln!(text, "[program.{name}.log]").unwrap();
            writeln!(text, "file = true\nmax_size = \"10MiB\"\nkeep = 3").unwrap();
            text.push('\n');
        }
        std::fs::write(dir.join(format!("{:02}-programs.toml", 10 + f)), text).unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    write_conf_d(dir.path());
    let env: HashMap<String, String> = [("HOSTNAME", "bench"), ("PORT_3", "9003")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let opts = LoadOptions {
        dir: dir.path().to_path_buf(),
        env: Some(env),
        ..Default::default()
    };
    // The directory must be valid, or the bench would measure error reporting.
    match load_dir(&opts) {
        Ok(config) => assert_eq!(config.programs.len(), FILES * PER_FILE),
        Err(errors) => panic!("the bench conf.d is invalid:\n{errors}"),
    }
    c.bench_function("config/load_dir 50 programs", |b| {
        b.iter(|| black_box(load_dir(black_box(&opts)).unwrap()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
