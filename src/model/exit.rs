//! How a process ended, classified once at reap time.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::signals::signal_name;

/// The end of a process: an exit code, or the signal that killed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exit {
    /// `exit(code)`; also 127 (not found) and 126 (not executable) for exec failures.
    Code(i32),
    /// Killed by a signal.
    Signal {
        /// The signal's number (`SIGKILL` is 9), as the kernel reports it.
        sig: i32,
        /// Whether the kernel dumped core.
        core_dumped: bool,
    },
}

impl Exit {
    /// The status a shell would report: the code, or 128 + signal.
    pub fn shell_code(&self) -> i32 {
        match *self {
            Exit::Code(c) => c,
            Exit::Signal { sig, .. } => 128 + sig,
        }
    }

    /// Whether this exit is one of `success_codes`.
    pub fn is_success(&self, success_codes: &[i32]) -> bool {
        matches!(self, Exit::Code(c) if success_codes.contains(c))
    }

    /// The signal number, when killed by one.
    pub fn signal(&self) -> Option<i32> {
        match *self {
            Exit::Signal { sig, .. } => Some(sig),
            Exit::Code(_) => None,
        }
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Exit::Code(c) => write!(f, "exit status {c}"),
            Exit::Signal { sig, core_dumped } => {
                write!(f, "killed by {}", signal_name(sig))?;
                if core_dumped {
                    write!(f, " (core dumped)")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_codes_and_text() {
        assert_eq!(Exit::Code(3).shell_code(), 3);
        let segv = Exit::Signal {
            sig: 11,
            core_dumped: true,
        };
        assert_eq!(segv.shell_code(), 139);
        assert_eq!(segv.to_string(), "killed by SIGSEGV (core dumped)");
        assert_eq!(Exit::Code(0).to_string(), "exit status 0");
        assert!(Exit::Code(2).is_success(&[0, 2]));
        assert!(!segv.is_success(&[0]));
    }
}
