//! `ctrlinit top`: a live full-screen view of the programs over the control socket (states from
//! the event stream, figures from a status a second and the client's own reading of `/proc`),
//! with keys to restart, stop and start the selected program and to read its last lines.
//! Without a terminal, or with `--once`, one frame as text.
//!
//! `model` (pure: what is shown), `figures` (pure: CPU % and memory from samples), `procfs`
//! (the samples), `text` (a frame as text), `render` (the frame on a terminal), `input` (keys
//! to intents), `guard` (the terminal's restoration), `feeds` (the threads that feed the view),
//! `live` (the loop).

pub mod feeds;
pub mod figures;
pub mod guard;
pub mod input;
pub mod live;
pub mod model;
pub mod procfs;
pub mod render;
pub mod text;

use std::io::IsTerminal;
use std::path::Path;

use crate::api::client::ClientError;
use crate::cli::ctl::{EXIT_FAILED, EXIT_OK, EXIT_UNREACHABLE};

/// `ctrlinit top [--once]`: the live view on a terminal, else one frame. Exit 0 after a quit or
/// a frame, 4 when the init cannot be reached (nothing listens, it closed the connection, or
/// it gave no answer in time: a stopped init) or goes away under the view, 1 when the terminal
/// fails or the init refused, 128+N after signal N.
pub fn top(socket: &Path, once: bool) -> u8 {
    let mut sampler = figures::Sampler::default();
    let first = match feeds::snapshot(socket, &mut sampler, procfs::clock_hz()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ctrlinit: {e}");
            return match e {
                feeds::Trouble::Client(
                    ClientError::Unreachable(..) | ClientError::Closed | ClientError::Timeout,
                ) => EXIT_UNREACHABLE,
                _ => EXIT_FAILED,
            };
        }
    };
    if once || !std::io::stdout().is_terminal() {
        let mut m = model::Model::new();
        live::apply(&mut m, first);
        print!("{}", text::frame(&m));
        return EXIT_OK;
    }
    live::run(socket, first, sampler)
}
