//! What `ctrlinit top` shows, as data: the last status snapshot with the events applied since,
//! each program's figures, the selection and what the view is doing (a question, the logs).
//! Pure: status answers and events go in, header lines and rows come out, so both the live view
//! and `--once` print the same thing and tests need no terminal.
//!
//! To show more (the previous boot's end, external dependencies), add a line in
//! [`Model::header_lines`] and rows in [`Model::rows`]: the renderers take whatever those give.

use std::collections::HashMap;

use super::figures::{Figures, cpu_text, memory_text};
use crate::model::State;
use crate::model::protocol::{
    EventRecord, ExternalStatus, NetworkStatus, PreviousBoot, ProgramStatus,
};

/// A change the view asks for, after a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `ctrlinit restart NAME`.
    Restart,
    /// `ctrlinit stop NAME`.
    Stop,
    /// `ctrlinit start NAME`.
    Start,
}

impl Action {
    /// The verb, as the command line spells it.
    pub fn verb(self) -> &'static str {
        match self {
            Action::Restart => "restart",
            Action::Stop => "stop",
            Action::Start => "start",
        }
    }
}

/// What the view is doing besides showing the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The table alone.
    Table,
    /// Asking whether to apply `Action` to the program named.
    Confirm(Action, String),
    /// The program's last log lines under the table (`None` until they arrive).
    Logs(String, Option<String>),
}

/// The column headings of a row, in the order of [`Row::cells`].
pub const COLUMNS: [&str; 10] = [
    "NAME",
    "STATE",
    "HEALTH",
    "PIDS",
    "CPU%",
    "MEM",
    "RUN",
    "RESTARTS",
    "UPTIME",
    "LAST EXIT",
];

/// One row of the table: a program (or, later, anything else with a state).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// What the selection and the actions name.
    pub name: String,
    /// The cells, under [`COLUMNS`].
    pub cells: [String; 10],
}

/// The view's state.
#[derive(Debug)]
pub struct Model {
    programs: Vec<ProgramStatus>,
    network: Option<NetworkStatus>,
    /// How the boot before this one ended (the run ledger), shown on top.
    previous_boot: Option<PreviousBoot>,
    /// External dependencies: rows under the programs' (not selectable: no action applies).
    externals: Vec<ExternalStatus>,
    /// The last event included (the snapshot's `seq`, then each event applied).
    seq: u64,
    figures: HashMap<String, Figures>,
    /// How long the init has run, in milliseconds, when it could be told.
    init_uptime_ms: Option<u64>,
    /// The selected row's name (kept by name: rows may come and go with a reload).
    selected: Option<String>,
    /// What the view is doing.
    pub mode: Mode,
    /// The last thing worth saying under the table: an action's outcome, the last event.
    pub note: String,
}

impl Model {
    /// An empty view; the first [`Model::apply_status`] fills it.
    pub fn new() -> Self {
        Model {
            programs: Vec::new(),
            network: None,
            previous_boot: None,
            externals: Vec::new(),
            seq: 0,
            figures: HashMap::new(),
            init_uptime_ms: None,
            selected: None,
            mode: Mode::Table,
            note: String::new(),
        }
    }

    /// Takes a status snapshot and the figures computed for it.
    pub fn apply_status(
        &mut self,
        seq: u64,
        programs: Vec<ProgramStatus>,
        network: Option<NetworkStatus>,
        figures: HashMap<String, Figures>,
        init_uptime_ms: Option<u64>,
    ) {
        // A snapshot older than an event already applied would undo it: keep the newer state,
        // take the rest (the next snapshot catches up).
        let newer_states: HashMap<String, State> = if seq < self.seq {
            self.programs
                .iter()
                .map(|p| (p.name.clone(), p.state))
                .collect()
        } else {
            HashMap::new()
        };
        self.programs = programs;
        for p in &mut self.programs {
            if let Some(s) = newer_states.get(&p.name) {
                p.state = *s;
            }
        }
        self.seq = self.seq.max(seq);
        self.network = network;
        self.figures = figures;
        self.init_uptime_ms = init_uptime_ms;
        self.keep_selection();
    }

    /// Takes what the snapshot says beside the programs: how the previous boot ended and the
    /// external dependencies' states.
    pub fn apply_surroundings(
        &mut self,
        previous_boot: Option<PreviousBoot>,
        externals: Vec<ExternalStatus>,
    ) {
        self.previous_boot = previous_boot;
        self.externals = externals;
    }

    /// Applies one streamed event: the program's new state and health at once (the figures
    /// follow with the next snapshot). Events the snapshot already includes are skipped.
    pub fn apply_event(&mut self, e: &EventRecord) {
        if e.seq <= self.seq {
            return;
        }
        self.seq = e.seq;
        self.note = format!("{} {}", clock_of(&e.time), e.message);
        let Some(p) = e
            .program
            .as_ref()
            .and_then(|n| self.programs.iter_mut().find(|p| &p.name == n))
        else {
            return;
        };
        if let Some(to) = e.to {
            p.state = to;
        }
        if let (Some(h), Some(info)) = (&e.health, p.health.as_mut()) {
            info.status = h.clone();
        }
    }

    /// The lines above the table: the container's boot, then what else is watched.
    pub fn header_lines(&self) -> Vec<String> {
        let mut lines = vec![self.boot_line()];
        if let Some(b) = &self.previous_boot {
            lines.push(crate::cli::history::boot_line(b));
        }
        if let Some(n) = &self.network {
            lines.push(crate::cli::network_line::render(n));
        }
        lines
    }

    /// `ctrlinit up 2h3m · 4 programs: 3 running, 1 completed`.
    fn boot_line(&self) -> String {
        let up = self
            .init_uptime_ms
            .map_or("?".into(), crate::cli::durations::short_duration);
        let mut counts: Vec<(State, usize)> = Vec::new();
        for p in &self.programs {
            match counts.iter_mut().find(|(s, _)| *s == p.state) {
                Some((_, n)) => *n += 1,
                None => counts.push((p.state, 1)),
            }
        }
        counts.sort_by_key(|(s, _)| State::ALL.iter().position(|a| a == s));
        let each: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
        let n = self.programs.len();
        format!(
            "ctrlinit up {up} · {n} program{}: {}",
            if n == 1 { "" } else { "s" },
            if each.is_empty() {
                "none".into()
            } else {
                each.join(", ")
            }
        )
    }

    /// The table's rows: programs in configuration order, then external dependencies (which
    /// the selection never reaches: it moves among the programs, the first rows).
    pub fn rows(&self) -> Vec<Row> {
        self.programs
            .iter()
            .map(|p| program_row(p, self.figures.get(&p.name)))
            .chain(self.externals.iter().map(external_row))
            .collect()
    }

    /// The selected row's index among [`Model::rows`].
    pub fn selected_index(&self) -> Option<usize> {
        let name = self.selected.as_ref()?;
        self.programs.iter().position(|p| &p.name == name)
    }

    /// The selected row's name.
    pub fn selected(&self) -> Option<&str> {
        self.selected.as_deref()
    }

    /// Moves the selection `by` rows (negative: up), within the table.
    pub fn move_selection(&mut self, by: isize) {
        let n = self.programs.len();
        if n == 0 {
            return;
        }
        let at = self.selected_index().unwrap_or(0) as isize;
        let to = (at + by).clamp(0, n as isize - 1) as usize;
        self.selected = Some(self.programs[to].name.clone());
    }

    /// After a snapshot: the same name if it is still there, else the first row.
    fn keep_selection(&mut self) {
        if self.selected_index().is_none() {
            self.selected = self.programs.first().map(|p| p.name.clone());
        }
    }
}

impl Default for Model {
    fn default() -> Self {
        Self::new()
    }
}

/// `12:03:04` of an RFC 3339 time (the whole text if it is not one).
fn clock_of(time: &str) -> &str {
    time.get(11..19).unwrap_or(time)
}

/// A program's cells.
fn program_row(p: &ProgramStatus, f: Option<&Figures>) -> Row {
    let f = f.copied().unwrap_or_default();
    let mut state = p.state.to_string();
    if p.stopped_by_hand {
        state.push_str(" (by hand)");
    }
    let pids = match p.pids.as_slice() {
        [] => p.pid.map_or("-".into(), |v| v.to_string()),
        [a, b, c, _, ..] => format!("{a} {b} {c} +{}", p.pids.len() - 3),
        all => all.iter().map(i32::to_string).collect::<Vec<_>>().join(" "),
    };
    Row {
        name: p.name.clone(),
        cells: [
            p.name.clone(),
            state,
            p.health.as_ref().map_or("-".into(), |h| h.status.clone()),
            pids,
            cpu_text(&f),
            memory_text(&f),
            p.run.to_string(),
            (p.restarts + p.forced_restarts).to_string(),
            p.uptime_ms
                .map_or("-".into(), crate::cli::durations::short_duration),
            p.last_exit.as_ref().map_or("-".into(), |e| e.text.clone()),
        ],
    }
}

/// An external dependency's row: its state and last check where a program has its figures.
fn external_row(e: &ExternalStatus) -> Row {
    let dash = || "-".to_string();
    Row {
        name: e.name.clone(),
        cells: [
            format!("{} (external)", e.name),
            e.state.clone(),
            e.last.clone().unwrap_or_else(dash),
            dash(),
            dash(),
            dash(),
            dash(),
            e.restarts_caused.to_string(),
            crate::cli::durations::short_duration(e.since_ms),
            e.check.clone(),
        ],
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::protocol::{ExitInfo, HealthInfo, RestartsByCause};

    /// A program as a status answer would carry it, running nothing.
    pub(crate) fn program(name: &str, state: State) -> ProgramStatus {
        ProgramStatus {
            name: name.into(),
            kind: "service".into(),
            state,
            pid: None,
            pgid: None,
            run: 1,
            since_ms: 0,
            uptime_ms: None,
            restarts: 0,
            restarts_in_window: 0,
            max_restarts: 5,
            forced_restarts: 0,
            last_exit: None,
            readiness: None,
            ready: false,
            backoff_remaining_ms: None,
            waiting_for: None,
            waiting_why: None,
            down_reason: None,
            stopped_by_hand: false,
            main: false,
            health: None,
            notify: None,
            restarts_by_cause: RestartsByCause::default(),
            processes: None,
            pids: Vec::new(),
            tracking: None,
            memory_bytes: None,
            cpu_usec: None,
            limits: None,
        }
    }

    fn event(seq: u64, program: &str, from: State, to: State) -> EventRecord {
        EventRecord {
            seq,
            time: "2026-12-03T12:03:04.000Z".into(),
            program: Some(program.into()),
            from: Some(from),
            to: Some(to),
            message: format!("{program} is {to}"),
            health: None,
        }
    }

    fn snapshot() -> Vec<ProgramStatus> {
        let mut api = program("api", State::Running);
        api.pid = Some(12);
        api.pids = vec![12, 13];
        api.run = 3;
        api.restarts = 1;
        api.forced_restarts = 1;
        api.uptime_ms = Some(75_000);
        api.last_exit = Some(ExitInfo {
            code: Some(1),
            signal: None,
            core_dumped: false,
            oom_killed: false,
            text: "exit status 1".into(),
        });
        api.health = Some(HealthInfo {
            status: "healthy".into(),
            unhealthy: false,
            check: "exec true".into(),
            on_failure: "restart".into(),
            last: None,
            checks_total: 0,
            failures_total: 0,
        });
        let mut setup = program("setup", State::Completed);
        setup.kind = "oneshot".into();
        vec![api, setup, program("worker", State::Running)]
    }

    fn model() -> Model {
        let mut m = Model::new();
        let figures = HashMap::from([(
            "api".to_string(),
            Figures {
                cpu_percent: Some(12.25),
                memory_bytes: Some(5 << 20),
            },
        )]);
        m.apply_status(7, snapshot(), None, figures, Some(3_723_000));
        m
    }

    #[test]
    fn the_previous_boot_heads_the_view_and_externals_follow_the_programs_unselectable() {
        let mut m = model();
        m.apply_surroundings(
            Some(PreviousBoot {
                ended: "unclean".into(),
                exit_status: None,
                reason: None,
                at: None,
                boot_id: "b".into(),
                ledger: None,
            }),
            vec![ExternalStatus {
                name: "config-api".into(),
                check: "tcp config:8082".into(),
                state: "down".into(),
                last: Some("connection refused".into()),
                since_ms: 5_000,
                checks: 9,
                restarts_caused: 2,
                dependents: vec!["api".into()],
            }],
        );
        let header = m.header_lines();
        assert_eq!(header.len(), 2, "{header:?}");
        assert!(header[1].contains("UNCLEANLY"), "{header:?}");
        let rows = m.rows();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[3].cells[0], "config-api (external)");
        assert_eq!(rows[3].cells[1], "down");
        assert_eq!(rows[3].cells[2], "connection refused");
        m.move_selection(10);
        assert_eq!(
            m.selected(),
            Some("worker"),
            "the selection stays among programs"
        );
    }

    #[test]
    fn a_snapshot_gives_the_boot_line_and_one_row_per_program() {
        let m = model();
        assert_eq!(
            m.header_lines(),
            ["ctrlinit up 1h2m · 3 programs: 2 running, 1 completed"]
        );
        let rows = m.rows();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[0].cells,
            [
                "api",
                "running",
                "healthy",
                "12 13",
                "12.2",
                "5.0M",
                "3",
                "2",
                "1m15s",
                "exit status 1"
            ]
            .map(String::from)
        );
        assert_eq!(rows[2].cells[3], "-", "no pids: -");
        assert_eq!(m.selected(), Some("api"), "the first row is selected");
    }

    #[test]
    fn events_change_a_rows_state_at_once_and_old_ones_are_skipped() {
        let mut m = model();
        m.apply_event(&event(7, "api", State::Running, State::Backoff));
        assert_eq!(m.rows()[0].cells[1], "running", "seq 7 is in the snapshot");
        m.apply_event(&event(8, "api", State::Running, State::Backoff));
        assert_eq!(m.rows()[0].cells[1], "backoff");
        assert_eq!(m.note, "12:03:04 api is backoff");
        // A snapshot taken before event 8 does not undo it.
        m.apply_status(7, snapshot(), None, HashMap::new(), None);
        assert_eq!(m.rows()[0].cells[1], "backoff");
        // One taken after it is the truth.
        m.apply_status(9, snapshot(), None, HashMap::new(), None);
        assert_eq!(m.rows()[0].cells[1], "running");
        assert!(m.header_lines()[0].starts_with("ctrlinit up ? ·"));
    }

    #[test]
    fn the_selection_moves_within_the_table_and_follows_its_name() {
        let mut m = model();
        m.move_selection(-1);
        assert_eq!(m.selected(), Some("api"));
        m.move_selection(5);
        assert_eq!(m.selected(), Some("worker"));
        // A reload removed `setup`: the worker stays selected, now second.
        let mut programs = snapshot();
        programs.remove(1);
        m.apply_status(10, programs, None, HashMap::new(), None);
        assert_eq!(
            (m.selected(), m.selected_index()),
            (Some("worker"), Some(1))
        );
        // It went too: the first row.
        m.apply_status(11, snapshot()[..1].to_vec(), None, HashMap::new(), None);
        assert_eq!(m.selected(), Some("api"));
    }

    #[test]
    fn many_pids_are_cut_and_the_by_hand_stop_is_said() {
        let mut p = program("pool", State::Stopped);
        p.stopped_by_hand = true;
        p.pids = vec![1, 2, 3, 4, 5];
        let row = program_row(&p, None);
        assert_eq!(row.cells[1], "stopped (by hand)");
        assert_eq!(row.cells[3], "1 2 3 +2");
    }
}
