//! What every connection task holds: the ways to the owner loop, the event stream, the log
//! thread, and the init's exit.

use std::io;

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};

use crate::logs::Command as LogCommand;
use crate::model::protocol::ProgramStatus;
use crate::supervisor::control::{Control, Detail};
use crate::supervisor::events::EventLog;

/// Everything a connection needs.
#[derive(Clone)]
pub(crate) struct Handles {
    /// To the owner loop.
    pub(crate) control: mpsc::UnboundedSender<Control>,
    /// State changes.
    pub(crate) events: Arc<EventLog>,
    /// The log thread (for `logs`).
    pub(crate) logs: mpsc::UnboundedSender<LogCommand>,
    /// Group allowed besides root and ctrlinit's own user.
    pub(crate) socket_gid: Option<u32>,
    /// Becomes true when the init is about to exit: streams and waits end, after writing what
    /// they have.
    pub(crate) closing: watch::Receiver<bool>,
}

impl Handles {
    /// Asks the owner loop and waits for its answer.
    pub(crate) async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Control,
    ) -> io::Result<T> {
        let (tx, rx) = oneshot::channel();
        self.control
            .send(make(tx))
            .map_err(|_| io::Error::other("the supervisor is gone"))?;
        rx.await
            .map_err(|_| io::Error::other("the supervisor is gone"))
    }

    /// Every program's status now.
    pub(crate) async fn all_programs(&self) -> io::Result<Vec<ProgramStatus>> {
        let all = self
            .ask(|reply| Control::Status {
                names: Vec::new(),
                detail: Detail::States,
                reply,
            })
            .await?;
        Ok(all.map(|(_, p)| p).unwrap_or_default())
    }
}

/// Resolves once the init starts to exit (holding nothing across the wait, so the task stays
/// `Send`).
pub(crate) async fn closed(closing: &mut watch::Receiver<bool>) {
    let _ = closing.wait_for(|c| *c).await;
}
