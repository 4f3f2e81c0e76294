//! The container's end: stray processes stopped within the budget, then the exit status.

use super::*;

impl Runner {
    /// [`Runner::finish`], then the boot's end in the run ledger (its last record).
    pub(super) async fn finish_and_record(
        &mut self,
        signals: &mut Signals,
        code: i32,
        deadline: Instant,
    ) -> i32 {
        let code = self.finish(signals, code, deadline).await;
        self.ledger.end(code, Instant::now());
        code
    }

    /// Every program is down: stop stray processes (TERM, then KILL at `deadline`), reap them,
    /// and return the exit status.
    pub(super) async fn finish(
        &mut self,
        signals: &mut Signals,
        code: i32,
        deadline: Instant,
    ) -> i32 {
        let mut scratch = Vec::new();
        if reap_exited(&mut scratch) == Children::None {
            self.tracking.cleanup();
            info!("all programs stopped; exiting with status {code}");
            return code;
        }
        info!("sending SIGTERM to the processes left over");
        signal_strays(self.opts.role, Signal::SIGTERM);
        signal_strays(self.opts.role, Signal::SIGCONT);
        loop {
            tokio::select! {
                _ = signals.recv() => {
                    if reap_exited(&mut scratch) == Children::None {
                        break;
                    }
                }
                _ = sleep_until(Some(deadline)) => {
                    warn!("processes left over after the stop budget; sending SIGKILL");
                    signal_strays(self.opts.role, Signal::SIGKILL);
                    // Killed processes die at once, unless in uninterruptible sleep: give them a
                    // moment, then leave the rest to the kernel (PID 1's exit kills them).
                    let grace = tokio::time::sleep(Duration::from_secs(1));
                    tokio::pin!(grace);
                    loop {
                        tokio::select! {
                            _ = signals.recv() => if reap_exited(&mut scratch) == Children::None { break },
                            _ = &mut grace => break,
                        }
                    }
                    break;
                }
            }
        }
        self.tracking.cleanup();
        info!("all programs stopped; exiting with status {code}");
        code
    }
}
