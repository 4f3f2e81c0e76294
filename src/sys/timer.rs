//! A sleep that wakes its thread once, at its end.
//!
//! tokio's timer wheel keeps a wait of seconds in a coarse slot and wakes the thread at that
//! slot's start to move it to a finer one, then again to the next: strace showed a 10 s wait
//! ending in three `epoll_wait` timeouts (1.8 s, 51 ms, then the due time), so each periodic
//! check of an idle container cost two wake-ups beyond its own (where an idle container is held
//! to three a check in all). A `timerfd` armed for the whole wait is one kernel timer and one wake-up.

use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Duration;

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use tokio::io::unix::AsyncFd;

/// A `timerfd` in the runtime's reactor (one descriptor for as long as it is kept).
pub struct Sleeper {
    timer: AsyncFd<Timer>,
}

/// The timerfd, as the reactor registers it.
struct Timer(TimerFd);

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

impl Sleeper {
    /// A monotonic timerfd, registered with the current tokio runtime.
    pub fn new() -> io::Result<Sleeper> {
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        // SAFETY: the timerfd is owned by the `Timer` moved into the AsyncFd and is closed only
        // when that is dropped (after the AsyncFd deregisters it); `as_raw_fd` always returns
        // that same descriptor.
        let timer = unsafe { AsyncFd::register(Timer(fd)) }.map_err(io::Error::from)?;
        Ok(Sleeper { timer })
    }

    /// Waits `d`. Should the timer fail (it does not, but a sleep must end), tokio's sleep
    /// does the wait.
    pub async fn sleep(&self, d: Duration) {
        if d.is_zero() {
            return;
        }
        let armed = self.timer.get_ref().0.set(
            Expiration::OneShot(TimeSpec::from_duration(d)),
            TimerSetTimeFlags::empty(),
        );
        if armed.is_err() {
            tokio::time::sleep(d).await;
            return;
        }
        loop {
            let Ok(mut ready) = self.timer.readable().await else {
                tokio::time::sleep(d).await;
                return;
            };
            // The expiry count (8 bytes); EAGAIN: not yet (readiness was stale), wait again.
            let read = ready.try_io(|t| {
                let mut count = [0u8; 8];
                nix::unistd::read(t.get_ref().0.as_fd(), &mut count).map_err(io::Error::from)
            });
            if let Ok(result) = read {
                if result.is_err() {
                    // Not the expiry: a broken timer; the wait is not cut short for it.
                    tokio::time::sleep(d).await;
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_lasts_at_least_its_duration_and_can_be_repeated() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let s = Sleeper::new().unwrap();
            for ms in [30u64, 10, 0] {
                let start = std::time::Instant::now();
                s.sleep(Duration::from_millis(ms)).await;
                assert!(start.elapsed() >= Duration::from_millis(ms), "{ms} ms");
            }
        });
    }
}
