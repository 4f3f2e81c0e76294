//! Who may use the control socket: root, ctrlinit's own user, or a member of its socket group.
//! Checked on the connection itself (SO_PEERCRED), so a socket file opened wide by someone does
//! not let others in.

use tokio::net::UnixStream;

/// A peer that may use the socket.
pub(crate) struct Peer {
    /// Its user.
    pub(crate) uid: u32,
    /// Root or ctrlinit's own user (always let in; others are limited).
    pub(crate) privileged: bool,
}

/// The peer of `stream` when it may use the socket; the refusal line otherwise.
pub(crate) fn check_peer(stream: &UnixStream, socket_gid: Option<u32>) -> Result<Peer, String> {
    let cred = stream
        .peer_cred()
        .map_err(|e| format!("cannot read peer credentials: {e}"))?;
    let uid = cred.uid();
    let own = nix::unistd::geteuid().as_raw();
    if uid == 0 || uid == own {
        return Ok(Peer {
            uid,
            privileged: true,
        });
    }
    if let Some(gid) = socket_gid
        && (cred.gid() == gid || user_in_group(uid, gid))
    {
        return Ok(Peer {
            uid,
            privileged: false,
        });
    }
    Err(format!(
        "permission denied: uid {uid} may not use this control socket"
    ))
}

fn user_in_group(uid: u32, gid: u32) -> bool {
    crate::sys::users::user_by_uid(uid)
        .is_some_and(|u| crate::sys::users::groups_of(&u.name, u.gid).contains(&gid))
}
