//! Who a program runs as: `user` and `group` resolved against `/etc/passwd` and `/etc/group` at
//! load time, and what a non-root ctrlinit may switch to.

use std::ops::Range;

use nix::unistd::{Gid, Uid};

use super::reader::{Reader, join};
use super::spec::RunAs;
use crate::sys::users::{self, UserEntry};

/// A value as written, with where it was written.
pub(super) type Spanned = (String, Range<usize>);

/// What a program table says of its identity.
pub(super) struct IdentityKeys {
    /// `user` as written (a name from `/etc/passwd` or a numeric uid), with its place for
    /// errors; `None`: run as ctrlinit's user.
    pub(super) user: Option<Spanned>,
    /// `group` as written (a name from `/etc/group` or a numeric gid), with its place; `None`:
    /// the user's passwd group, or ctrlinit's group without a `user`.
    pub(super) group: Option<Spanned>,
    /// `supplementary_groups`, each with its place; `None`: the groups listing the user (or
    /// ctrlinit's own without a `user`).
    pub(super) supplementary: Option<Vec<Spanned>>,
}

/// Resolves `user`, `group` and `supplementary_groups`:
/// - `user` alone: its passwd entry's group is the primary group, and the groups listing the
///   user in `/etc/group` are the supplementary ones (as `initgroups` does);
/// - `group = "x"` as well: x is the primary group, and the user's own passwd group is not kept
///   as a supplementary one (only the groups that list the user, and x);
/// - `supplementary_groups`: exactly those, whatever the rest says;
/// - a numeric `user` with no passwd entry needs `group` (else it would run with group 0).
pub(super) fn read_run_as(r: &mut Reader<'_>, path: &str, keys: &IdentityKeys) -> RunAs {
    let mut run_as = RunAs {
        uid: None,
        gid: None,
        groups: None,
        user_name: None,
        home: None,
    };
    let group = keys
        .group
        .as_ref()
        .and_then(|(name, span)| read_group(r, path, name, span));
    if let Some(user) = &keys.user {
        read_user(r, path, user, keys.group.is_some(), group, &mut run_as);
    } else if let Some(g) = group {
        run_as.gid = Some(g);
    }
    if let Some(list) = &keys.supplementary {
        run_as.groups = Some(read_supplementary(r, path, list));
    }
    check_privileges(r, path, &run_as, keys.user.as_ref(), keys.group.as_ref());
    run_as
}

/// The gid `group` names; `None` (with the error said) when no such group exists.
fn read_group(r: &mut Reader<'_>, path: &str, name: &str, span: &Range<usize>) -> Option<u32> {
    let gid = resolve_group(name);
    if gid.is_none() {
        r.error(
            span,
            &join(path, "group"),
            format!("unknown group {name:?}"),
            Some("name a group from /etc/group, or a numeric gid".into()),
        );
    }
    gid
}

/// Fills `run_as` from `user`: its uid, and its primary and supplementary groups from its
/// passwd entry unless `group` (already resolved, `None` if absent or unknown) overrides the
/// primary one. `group_given` says whether `group` was written at all, so an unknown group is
/// not also reported as a missing one.
fn read_user(
    r: &mut Reader<'_>,
    path: &str,
    user: &Spanned,
    group_given: bool,
    group: Option<u32>,
    run_as: &mut RunAs,
) {
    let (name, span) = user;
    match resolve_user(name) {
        Some((uid, Some(u))) => {
            run_as.uid = Some(uid);
            run_as.gid = Some(group.unwrap_or(u.gid));
            run_as.groups = Some(match group {
                None => users::groups_of(&u.name, u.gid),
                Some(g) => {
                    let mut listed = users::groups_of(&u.name, g);
                    // groups_of puts the primary first: the passwd group only when listed.
                    listed.retain(|&x| x == g || users::lists_member(x, &u.name));
                    listed
                }
            });
            run_as.user_name = Some(u.name.clone());
            run_as.home = Some(u.home.clone());
        }
        Some((uid, None)) => {
            run_as.uid = Some(uid);
            // No passwd entry, so no group of its own: one must be given.
            if !group_given {
                r.error(
                    span,
                    &join(path, "user"),
                    format!("user {name:?} has no /etc/passwd entry, so it has no group"),
                    Some(format!(
                        "set group as well (e.g. group = \"{name}\"), or add the user to /etc/passwd"
                    )),
                );
            }
            run_as.gid = group.or(Some(0));
            run_as.groups = Some(group.into_iter().collect());
        }
        None => r.error(
            span,
            &join(path, "user"),
            format!("unknown user {name:?}"),
            Some("name a user from /etc/passwd, or a numeric uid".into()),
        ),
    }
}

/// The gids `supplementary_groups` names, in order; each unknown one is reported (by its
/// index) and left out.
fn read_supplementary(r: &mut Reader<'_>, path: &str, list: &[Spanned]) -> Vec<u32> {
    let mut gids = Vec::new();
    for (k, (name, span)) in list.iter().enumerate() {
        match resolve_group(name) {
            Some(gid) => gids.push(gid),
            None => r.error(
                span,
                &format!("{}[{k}]", join(path, "supplementary_groups")),
                format!("unknown group {name:?}"),
                Some("name a group from /etc/group, or a numeric gid".into()),
            ),
        }
    }
    gids
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
