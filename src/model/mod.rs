//! The shared vocabulary: the words every part of ctrlinit speaks, from the command line to the
//! operating system layer. It imports nothing of ctrlinit's own, so anything may import it.
//!
//! - [`state::State`]: the lowercase lifecycle states users see everywhere;
//! - [`exit::Exit`] and [`signals`]: how a process ended, and signal names;
//! - [`durations`]: durations as users write them;
//! - [`id::ProgramId`]: a program's identity for as long as ctrlinit runs;
//! - [`protocol`]: the control protocol's requests and answers, with a typed error;
//! - [`ledger`]: the run ledger's records (`ledger.jsonl`, `ctrlinit history`);
//! - [`printable`]: text from outside made safe to show on a terminal.

#![warn(missing_docs)]

pub mod durations;
pub mod exit;
pub mod id;
pub mod ledger;
pub mod pattern;
pub mod printable;
pub mod protocol;
pub mod signals;
pub mod state;

pub use exit::Exit;
pub use id::ProgramId;
pub use state::State;
