//! What the syslog intake attributes a sender to: a program's run. A file of its own, so the
//! log thread's command type can name it without importing the intake.

/// A program's run as the intake knows it: the program's name and the session the run leads
/// (its own for the whole run), so what one run opened is never taken for the next run's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The program's name.
    pub name: String,
    /// The session (process group) the run leads.
    pub session: i32,
}
