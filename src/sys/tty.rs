//! The terminal on stdin (`docker run -it`): whether there is one, and handing its foreground
//! back to ctrlinit when the program that had it ends.

/// Whether stdin is a terminal.
pub fn stdin_is_terminal() -> bool {
    // SAFETY: isatty takes a descriptor number and reads no memory of ours.
    unsafe { libc::isatty(libc::STDIN_FILENO) == 1 }
}

/// Makes ctrlinit's process group the terminal's foreground again (the program that had it
/// ended), so the terminal is not left to a group that no longer exists. SIGTTOU is blocked
/// in ctrlinit, so this works from the background; without a controlling terminal it fails
/// and changes nothing.
pub fn take_foreground_back() {
    if !stdin_is_terminal() {
        return;
    }
    // SAFETY: getpgrp and tcsetpgrp take no pointers.
    unsafe {
        libc::tcsetpgrp(libc::STDIN_FILENO, libc::getpgrp());
    }
}
