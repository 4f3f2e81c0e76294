//! The terminal while the view runs: raw mode and the alternate screen, given back whatever
//! ends the view. Dropping the [`Guard`] restores it (a quit, an error, the init going away, a
//! signal: each returns through the loop); a panic restores it from the panic hook before the
//! message is printed, so the message lands on the normal screen, readable.

use std::io::{self, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

/// Whether the terminal is in the view's mode now (so it is restored once, not twice).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The terminal in the view's mode; restored when dropped.
pub struct Guard(());

impl Guard {
    /// Puts the terminal in raw mode on the alternate screen, cleared, cursor hidden.
    pub fn enter() -> io::Result<Guard> {
        install_panic_hook();
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        // From here on a failure restores what was done (the guard drops).
        let guard = Guard(());
        execute!(
            io::stdout(),
            EnterAlternateScreen,
            Clear(ClearType::All),
            Hide
        )?;
        Ok(guard)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Gives the terminal back: cooked mode, cursor shown, the normal screen (its last sequence,
/// so a terminal's output ends with leaving the alternate screen).
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let _ = disable_raw_mode();
    let mut out = io::stdout();
    let _ = execute!(out, Show, LeaveAlternateScreen);
    let _ = out.flush();
}

/// A panic restores the terminal first, then says what happened (installed once per
/// process). A panic while the view runs ends the process there: on any thread (a feed's too),
/// so the loop never goes on drawing on the restored screen.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let viewing = ACTIVE.load(Ordering::SeqCst);
            restore();
            previous(info);
            if viewing {
                std::process::exit(101);
            }
        }));
    });
}
