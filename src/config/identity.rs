//! Who a program runs as: `user` and `group` resolved against `/etc/passwd` and `/etc/group` at
//! load time, and what a non-root ctrlinit may switch to.

use std::ops::Range;

use nix::unistd::{Gid, Uid};

use super::reader::{Reader, join};
use super::spec::RunAs;
use crate::sys::users::{self, UserEntry};

pub(super) fn read_run_as(
    r: &mut Reader<'_>,
    path: &str,
    user: Option<(String, Range<usize>)>,
    group: Option<(String, Range<usize>)>,
) -> RunAs {
    let mut run_as = RunAs {
        uid: None,
        gid: None,
        groups: None,
        user_name: None,
        home: None,
    };
    if let Some((name, span)) = &user {
        match resolve_user(name) {
            Some((uid, entry)) => {
                run_as.uid = Some(uid);
                match entry {
                    Some(u) => {
                        run_as.gid = Some(u.gid);
                        run_as.groups = Some(users::groups_of(&u.name, u.gid));
                        run_as.user_name = Some(u.name.clone());
                        run_as.home = Some(u.home.clone());
                    }
                    None => {
                        // A bare uid with no passwd entry: as Docker does, primary group 0 and
                        // no supplementary groups.
                        run_as.gid = Some(0);
                        run_as.groups = Some(Vec::new());
                    }
                }
            }
            None => r.error(
                span,
                &join(path, "user"),
                format!("unknown user {name:?}"),
                Some("name a user from /etc/passwd, or a numeric uid".into()),
            ),
        }
    }
    if let Some((name, span)) = &group {
        match resolve_group(name) {
            Some(gid) => run_as.gid = Some(gid),
            None => r.error(
                span,
                &join(path, "group"),
                format!("unknown group {name:?}"),
                Some("name a group from /etc/group, or a numeric gid".into()),
            ),
        }
    }
    check_privileges(r, path, &run_as, user.as_ref(), group.as_ref());
    run_as
}

/// A non-root ctrlinit can only run programs as itself.
fn check_privileges(
    r: &mut Reader<'_>,
    path: &str,
    run_as: &RunAs,
    user: Option<&(String, Range<usize>)>,
    group: Option<&(String, Range<usize>)>,
) {
    let euid = Uid::effective().as_raw();
    if euid == 0 {
        return;
    }
    if let (Some(uid), Some((name, span))) = (run_as.uid, user)
        && uid != euid
    {
        r.error(
            span,
            &join(path, "user"),
            format!("ctrlinit runs as uid {euid} and cannot switch to user {name:?}"),
            Some("run ctrlinit as root, or remove `user`".into()),
        );
    }
    let egid = Gid::effective().as_raw();
    if let (Some(gid), Some((name, span))) = (run_as.gid, group)
        && gid != egid
    {
        r.error(
            span,
            &join(path, "group"),
            format!("ctrlinit runs as gid {egid} and cannot switch to group {name:?}"),
            Some("run ctrlinit as root, or remove `group`".into()),
        );
    }
}

/// A user by name or numeric id: its uid, and its passwd entry when it has one.
fn resolve_user(name: &str) -> Option<(u32, Option<UserEntry>)> {
    if let Ok(uid) = name.parse::<u32>() {
        return Some((uid, users::user_by_uid(uid)));
    }
    users::user_by_name(name).map(|u| (u.uid, Some(u)))
}

/// Resolves a group name or numeric id; `None` when no such group exists.
pub fn resolve_group(name: &str) -> Option<u32> {
    if let Ok(gid) = name.parse::<u32>() {
        return Some(gid);
    }
    users::group_by_name(name)
}
