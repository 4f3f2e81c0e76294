//! Dependencies outside the container (`[external.NAME]`): their state from check results,
//! and what it means for the programs that depend on them.
//!
//! An external is a node of the dependency graph without a process: *waiting* until
//! `successes` checks in a row pass, then *ready*; *down* after `failures` in a row fail. A
//! dependent waits for it as for a `ready` program. When a ready external goes down, or a
//! peer ctrlinit's program is seen on a new run, its dependents with `restart = true` (and
//! theirs, transitively) are stopped dependents first, as a propagated restart, and start
//! again in order once it is ready: their restart budgets are untouched, and the log names the
//! external. A `start_timeout` with `on_timeout = "exit"` takes the container down with `[init]
//! exit_code` when the external was never ready in time.

use std::sync::Arc;
use std::time::Instant;

use super::{Action, Core, Level};
use crate::config::{ExternalSpec, OnTimeout};
use crate::model::printable::escape_controls;
use crate::supervisor::core::external_record::{External, ExternalState};

impl Core {
    /// The externals, sorted by name.
    pub fn externals(&self) -> &[External] {
        &self.externals
    }

    pub(super) fn external_index(&self, name: &str) -> Option<usize> {
        self.externals.iter().position(|e| e.spec.name == name)
    }

    /// At boot: the start timeouts begin.
    pub(super) fn boot_externals(&mut self, now: Instant) {
        for e in &mut self.externals {
            e.give_up_at = e.spec.start_timeout.map(|t| now + t);
        }
    }

    /// A reload: externals kept with their state when their settings did not change; new or
    /// changed ones start waiting (their start timeouts from now).
    pub(super) fn reload_externals(&mut self, specs: &[ExternalSpec], now: Instant) {
        let old = std::mem::take(&mut self.externals);
        self.externals = specs
            .iter()
            .map(|spec| match old.iter().find(|e| *e.spec == *spec) {
                Some(kept) => kept.clone(),
                None => {
                    let mut e = External::new(Arc::new(spec.clone()), now);
                    e.give_up_at = spec.start_timeout.map(|t| now + t);
                    e
                }
            })
            .collect();
    }

    /// The earliest start timeout still running.
    pub(super) fn externals_deadline(&self) -> Option<Instant> {
        self.externals.iter().filter_map(|e| e.give_up_at).min()
    }

    /// A check of external `name` ended.
    pub(super) fn external_checked(
        &mut self,
        name: &str,
        passed: bool,
        output: String,
        peer_run: Option<String>,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let Some(k) = self.external_index(name) else {
            return;
        };
        self.note_check(k, &output);
        let e = &mut self.externals[k];
        if passed {
            e.fails = 0;
            e.passes = e.passes.saturating_add(1);
            if e.state != ExternalState::Ready && e.passes >= e.spec.successes {
                self.external_ready(k, peer_run, now, acts);
            } else if e.state == ExternalState::Ready {
                self.peer_seen(k, peer_run, now, acts);
            }
        } else {
            e.passes = 0;
            e.fails = e.fails.saturating_add(1);
            if e.state == ExternalState::Ready && e.fails >= e.spec.failures {
                e.state = ExternalState::Down;
                e.since = now;
                e.restarts_caused += 1;
                let msg = format!(
                    "external {name}: ready -> down after {} failed check(s): {}",
                    e.fails,
                    e.last.as_deref().unwrap_or("")
                );
                self.notice(None, Level::Warn, None, msg, acts);
                self.propagate_external(k, now, acts);
            }
        }
        self.refresh_waiting_reasons(k);
    }

    /// A check of external `name` got no verdict (its peer is busy): said, but neither a pass
    /// nor a failure, so one container's probe port under attack does not restart the programs
    /// of every container that depends on it.
    pub(super) fn external_no_verdict(&mut self, name: &str, output: &str) {
        let Some(k) = self.external_index(name) else {
            return;
        };
        self.note_check(k, output);
        self.refresh_waiting_reasons(k);
    }

    /// Counts a check of external `k` and keeps what it said for `status` and the log, as
    /// text: the other side's words are escaped, never shown raw.
    fn note_check(&mut self, k: usize, output: &str) {
        let e = &mut self.externals[k];
        e.checks += 1;
        e.last = Some(format!(
            "{}: {}",
            e.spec.check.describe(),
            escape_controls(output)
        ));
    }

    fn external_ready(
        &mut self,
        k: usize,
        peer_run: Option<String>,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let e = &mut self.externals[k];
        let from = e.state;
        e.state = ExternalState::Ready;
        e.since = now;
        e.give_up_at = None;
        e.peer_run = peer_run;
        let msg = format!(
            "external {}: {} -> ready: {}",
            e.spec.name,
            from.as_str(),
            e.last.as_deref().unwrap_or("")
        );
        self.notice(None, Level::Info, None, msg, acts);
    }

    /// A passing check of a ready external: a peer program on a new run restarts the dependents.
    fn peer_seen(
        &mut self,
        k: usize,
        peer_run: Option<String>,
        now: Instant,
        acts: &mut Vec<Action>,
    ) {
        let e = &mut self.externals[k];
        let Some(seen) = peer_run else {
            return;
        };
        let before = e.peer_run.replace(seen.clone());
        if before.is_none() || before.as_deref() == Some(seen.as_str()) {
            return;
        }
        e.restarts_caused += 1;
        let msg = format!(
            "external {}: the peer's program is on a new run ({} -> {seen})",
            e.spec.name,
            before.unwrap_or_default()
        );
        self.notice(None, Level::Warn, None, msg, acts);
        self.propagate_external(k, now, acts);
    }

    /// Waiting dependents say the external's latest result.
    fn refresh_waiting_reasons(&mut self, k: usize) {
        let name = self.externals[k].spec.name.clone();
        if self.externals[k].state == ExternalState::Ready {
            return;
        }
        let why = self.externals[k].waiting_why();
        for p in &mut self.programs {
            if p.waiting_for.as_deref() == Some(name.as_str()) {
                p.waiting_why = Some(why.clone());
            }
        }
    }

    /// The programs living in external `k` (`restart = true` on it, or on one that does)
    /// restart, as after a holder program's end: stopped dependents first, started again once
    /// all are down and `k` is ready again. Not counted against their budgets.
    fn propagate_external(&mut self, k: usize, now: Instant, acts: &mut Vec<Action>) {
        let name = self.externals[k].spec.name.clone();
        let roots: Vec<usize> = (0..self.programs.len())
            .filter(|&i| {
                self.programs[i]
                    .spec
                    .depends_on
                    .iter()
                    .any(|d| d.name == name && d.restart)
            })
            .collect();
        let cause = format!("external {name}");
        self.propagate_from(&roots, &cause, now, acts);
    }

    /// The start timeouts that ran out at `now`.
    pub(super) fn external_deadlines(&mut self, now: Instant, acts: &mut Vec<Action>) {
        for k in 0..self.externals.len() {
            let e = &mut self.externals[k];
            match e.give_up_at {
                Some(t) if t <= now => e.give_up_at = None,
                _ => continue,
            }
            let spec = Arc::clone(&e.spec);
            let timeout = spec.start_timeout.unwrap_or_default();
            let line = format!(
                "external {} was not ready within start_timeout {} ({})",
                spec.name,
                humantime::format_duration(timeout),
                e.waiting_why()
            );
            match spec.on_timeout {
                OnTimeout::Wait => self.notice(None, Level::Warn, None, line, acts),
                OnTimeout::Exit => {
                    self.notice(None, Level::Error, None, line.clone(), acts);
                    acts.push(Action::TerminationMessage(line));
                    let code = i32::from(self.init.exit_code);
                    let reason = format!("external {} is not ready", spec.name);
                    self.begin_shutdown(code, &reason, now, acts);
                }
            }
        }
    }

    /// The first external program `i` depends on that is not ready: its name and the reason.
    pub(super) fn unmet_external(&self, i: usize) -> Option<(String, String)> {
        self.programs[i].spec.depends_on.iter().find_map(|d| {
            let e = &self.externals[self.external_index(&d.name)?];
            (e.state != ExternalState::Ready).then(|| (d.name.clone(), e.waiting_why()))
        })
    }
}
