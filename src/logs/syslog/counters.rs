//! What the syslog intake counted, read by `/metrics` on another thread.

use std::sync::atomic::{AtomicU64, Ordering};

/// What the intake counted, read by `/metrics` on another thread (counters only: no state is
/// shared).
#[derive(Debug, Default)]
pub struct SyslogCounters {
    /// Messages received (datagrams, and stream messages).
    pub received: AtomicU64,
    /// Messages cut at [`MESSAGE_MAX`].
    pub truncated: AtomicU64,
    /// Messages from senders that belong to no program (written to the `syslog` stream).
    pub foreign: AtomicU64,
    /// Messages dropped over their source's per-second budget.
    pub rate_dropped: AtomicU64,
    /// Console lines dropped because the console was full (their files have them).
    pub console_dropped: AtomicU64,
    /// Stream connections refused over the cap.
    pub stream_refused: AtomicU64,
    /// Stream connections closed for a message left unfinished past the deadline.
    pub stream_timed_out: AtomicU64,
    /// Stream connections closed after a silence past the idle deadline.
    pub stream_idle_closed: AtomicU64,
    /// Stream connections closed because the run that opened them ended.
    pub stream_run_ended: AtomicU64,
}

impl SyslogCounters {
    pub(super) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Each counter for `/metrics`: its family name after `ctrlinit_syslog_`, its help, its
    /// value.
    pub fn figures(&self) -> Vec<(&'static str, &'static str, u64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("messages", "syslog messages received.", get(&self.received)),
            (
                "truncated_messages",
                "syslog messages cut at 8 KiB.",
                get(&self.truncated),
            ),
            (
                "foreign_messages",
                "syslog messages from senders that belong to no program (the syslog stream).",
                get(&self.foreign),
            ),
            (
                "rate_dropped_messages",
                "syslog messages dropped over their source's per-second budget.",
                get(&self.rate_dropped),
            ),
            (
                "console_dropped_lines",
                "syslog lines not shown on a full console (their log files have them).",
                get(&self.console_dropped),
            ),
            (
                "stream_refused_connections",
                "syslog stream connections closed at once over the cap.",
                get(&self.stream_refused),
            ),
            (
                "stream_timed_out_connections",
                "syslog stream connections closed for a message left unfinished.",
                get(&self.stream_timed_out),
            ),
            (
                "stream_idle_closed_connections",
                "syslog stream connections closed after 30 s without a byte.",
                get(&self.stream_idle_closed),
            ),
            (
                "stream_run_ended_connections",
                "syslog stream connections closed because the run that opened them ended.",
                get(&self.stream_run_ended),
            ),
        ]
    }
}
