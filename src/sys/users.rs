//! Users and groups from `/etc/passwd` and `/etc/group`.
//!
//! Read directly rather than through libc's NSS: a static ctrlinit (the one for `FROM scratch`
//! images) cannot load NSS modules, and in a container the files are the only database anyway.

use std::path::{Path, PathBuf};

/// One `/etc/passwd` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserEntry {
    /// Login name.
    pub name: String,
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Home directory.
    pub home: PathBuf,
}

const PASSWD: &str = "/etc/passwd";
const GROUP: &str = "/etc/group";

/// The user called `name`.
pub fn user_by_name(name: &str) -> Option<UserEntry> {
    users(Path::new(PASSWD))
        .into_iter()
        .find(|u| u.name == name)
}

/// The user with id `uid`.
pub fn user_by_uid(uid: u32) -> Option<UserEntry> {
    users(Path::new(PASSWD)).into_iter().find(|u| u.uid == uid)
}

/// The id of the group called `name`.
pub fn group_by_name(name: &str) -> Option<u32> {
    groups(Path::new(GROUP))
        .into_iter()
        .find(|g| g.0 == name)
        .map(|g| g.1)
}

/// `user`'s groups: its primary group and every group listing it as a member.
pub fn groups_of(user: &str, primary: u32) -> Vec<u32> {
    groups_of_in(Path::new(GROUP), user, primary)
}

/// Whether group `gid` lists `user` as a member in `/etc/group`.
pub fn lists_member(gid: u32, user: &str) -> bool {
    groups(Path::new(GROUP))
        .into_iter()
        .any(|(_, g, members)| g == gid && members.iter().any(|m| m == user))
}

fn groups_of_in(file: &Path, user: &str, primary: u32) -> Vec<u32> {
    let mut out = vec![primary];
    for (_, gid, members) in groups(file) {
        if members.iter().any(|m| m == user) && !out.contains(&gid) {
            out.push(gid);
        }
    }
    out
}

fn users(file: &Path) -> Vec<UserEntry> {
    records(file, |f| {
        Some(UserEntry {
            name: f.first()?.to_string(),
            uid: f.get(2)?.parse().ok()?,
            gid: f.get(3)?.parse().ok()?,
            home: PathBuf::from(f.get(5).copied().unwrap_or("/")),
        })
    })
}

fn groups(file: &Path) -> Vec<(String, u32, Vec<String>)> {
    records(file, |f| {
        let members = f
            .get(3)
            .map(|m| {
                m.split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Some((f.first()?.to_string(), f.get(2)?.parse().ok()?, members))
    })
}

/// Applies `parse` to the colon-separated fields of each non-comment line; a missing or
/// unreadable file is an empty database.
fn records<T>(file: &Path, parse: impl Fn(&[&str]) -> Option<T>) -> Vec<T> {
    // A database over 4 MiB is not a container's: read as empty rather than without bound.
    let text = super::files::read_regular(file, 4 << 20)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| parse(&l.split(':').collect::<Vec<&str>>()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_passwd_and_group_files() {
        let dir = tempfile::tempdir().unwrap();
        let passwd = dir.path().join("passwd");
        let group = dir.path().join("group");
        std::fs::write(&passwd, "# comment\nroot:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/srv/app:/bin/sh\nbroken:line\n").unwrap();
        std::fs::write(
            &group,
            "root:x:0:\napp:x:1000:\nops:x:50:app,other\nlog:x:60:other\n",
        )
        .unwrap();
        let u = users(&passwd);
        assert_eq!(u.len(), 2);
        assert_eq!(
            u[1],
            UserEntry {
                name: "app".into(),
                uid: 1000,
                gid: 1000,
                home: "/srv/app".into()
            }
        );
        assert_eq!(groups_of_in(&group, "app", 1000), vec![1000, 50]);
        assert!(groups(&group).iter().any(|g| g.0 == "log" && g.1 == 60));
        assert!(users(&dir.path().join("missing")).is_empty());
    }
}
