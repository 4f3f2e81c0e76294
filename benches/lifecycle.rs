//! Criterion: one step of the pure lifecycle, `ctrlinit::supervisor::Core::handle`.
//!
//! - `reaped unknown pid`: an orphan reaped by PID 1 that belongs to no program (the reaping
//!   workload: 20,000 of these in a burst), with 50 programs running.
//! - `crash cycle`: a running program is SIGKILLed from outside: `Reaped` (crash: stop the rest of
//!   its group), `GroupGone` (zero backoff: spawn again), `Spawned` (running again), with 50
//!   programs configured — the decisions behind the restart-latency workload.
//! - `reaped known crash`: the `Reaped` step alone, on a fresh core each time.
//!
//! The config is loaded from a temp `conf.d` with `load_dir`, as the binary does.
//!
//! Smoke mode (CI): `cargo bench --bench lifecycle -- --warm-up-time 0.1 --measurement-time 0.2`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ctrlinit::config::{Config, LoadOptions, load_dir};
use ctrlinit::model::Exit;
use ctrlinit::supervisor::{Action, Core, Input};

const PROGRAMS: usize = 50;

fn config() -> Config {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("[init]\nstop_timeout = \"9s\"\n\n");
    for i in 0..PROGRAMS {
        text.push_str(&format!(
            "[program.p{i:02}]\ncommand = [\"/bin/sleep\", \"infinity\"]\n\
             backoff = {{ initial = \"0s\", max = \"0s\" }}\nmax_restarts = 999999\n\n"
        ));
    }
    std::fs::write(dir.path().join("bench.toml"), text).unwrap();
    let opts = LoadOptions {
        dir: dir.path().to_path_buf(),
        env: Some(Default::default()),
        ..Default::default()
    };
    load_dir(&opts).unwrap_or_else(|e| panic!("bench config invalid:\n{e}"))
}

/// A core with every program spawned (pids 1000 + index), as after start-up.
fn running_core(config: &Config, now: Instant) -> Core {
    let mut core = Core::new(config, now);
    let mut queue = vec![Input::Boot];
    while let Some(input) = queue.pop() {
        for a in core.handle(input, now) {
            if let Action::Spawn { id } = a {
                queue.push(Input::Spawned {
                    id,
                    pid: 1000 + id.index() as i32,
                });
            }
        }
    }
    let running = core
        .programs()
        .iter()
        .filter(|p| p.phase.pid().is_some())
        .count();
    assert_eq!(running, PROGRAMS, "every program should be running");
    core
}

const KILLED: Exit = Exit::Signal {
    sig: 9,
    core_dumped: false,
};

fn bench(c: &mut Criterion) {
    let config = config();
    let t0 = Instant::now();

    let mut core = running_core(&config, t0);
    c.bench_function("lifecycle/reaped unknown pid (50 programs)", |b| {
        b.iter(|| {
            black_box(core.handle(
                Input::Reaped {
                    pid: black_box(999_999),
                    exit: Exit::Code(0),
                    group_empty: true,
                    oom_killed: false,
                },
                t0,
            ))
        })
    });

    // Crash → group gone → respawn → running, forever on the same program; time moves by 2 s per
    // cycle so the restart window never fills.
    let mut core = running_core(&config, t0);
    let id = core.programs()[PROGRAMS / 2].id;
    let mut pid = 1000 + id.index() as i32;
    let mut now = t0;
    c.bench_function(
        "lifecycle/crash cycle: reaped, group gone, respawned",
        |b| {
            b.iter(|| {
                now += Duration::from_secs(2);
                // The group is checked apart (as when a member lingers), so the three steps stay
                // three decisions.
                let a = core.handle(
                    Input::Reaped {
                        pid,
                        exit: KILLED,
                        group_empty: false,
                        oom_killed: false,
                    },
                    now,
                );
                black_box(&a);
                let a = core.handle(Input::GroupGone { id }, now);
                debug_assert!(a.iter().any(|a| matches!(a, Action::Spawn { .. })));
                black_box(&a);
                pid += 1;
                black_box(core.handle(Input::Spawned { id, pid }, now))
            })
        },
    );

    // The Reaped step alone: each iteration gets a freshly started core (set-up not timed).
    let victim = 1000 + id.index() as i32;
    c.bench_function("lifecycle/reaped known program crash (50 programs)", |b| {
        b.iter_batched(
            || running_core(&config, t0),
            |mut fresh| {
                let acts = fresh.handle(
                    Input::Reaped {
                        pid: victim,
                        exit: KILLED,
                        group_empty: false,
                        oom_killed: false,
                    },
                    t0,
                );
                (fresh, acts)
            },
            BatchSize::SmallInput,
        )
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
