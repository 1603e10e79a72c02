//! Script security: what keepalived's `check_script_secure` checks before it runs a script, and
//! a little more. Every file a command runs through (its program, whether written as a path or
//! found on PATH, and every argument that names an existing file, such as the script handed to
//! `/usr/bin/timeout 1.9 DIR/chk.sh`) is resolved one component at a time, as the kernel
//! resolves it, each symbolic link followed to its target and the target's directories walked
//! too. Everything passed through must be owned by root and writable by root only: no write for
//! other users, none for a group other than root's; a sticky directory (/tmp) is the exception,
//! since nobody can replace root's files in it. The program must also be a regular file that
//! the user it runs as may execute.
//!
//! keepalived checks the path only when a script runs as root; vrrpd checks it for every user,
//! since a track script's exit status moves VIPs whoever runs it. With `enable_script_security`
//! a script that fails is refused; without, it runs and the reason is logged (keepalived's
//! "Unsafe permissions found for script").

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::scripts::{self, Identity, IdentityError};
use crate::config::{Command, Config};

/// Resolved track scripts: program and identity, by name.
pub type Scripts = BTreeMap<String, (PathBuf, Option<Identity>)>;

/// The notify commands that may run: their programs, by command line.
pub type Notifiers = BTreeMap<Vec<String>, PathBuf>;

/// The FIFO readers (`notify_fifo_script`) that may run: program and identity, by FIFO path.
pub type Readers = BTreeMap<PathBuf, (PathBuf, Option<Identity>)>;

/// What of a configuration's scripts may run, and as whom.
#[derive(Debug, Clone, Default)]
pub struct Admitted {
    /// The track scripts.
    pub scripts: Scripts,
    /// The notify commands of every instance and sync group.
    pub notifiers: Notifiers,
    /// Who notify commands run as (`None`: vrrpd's own user).
    pub notify_as: Option<Identity>,
    /// The notify FIFOs' readers.
    pub readers: Readers,
}

/// A user that scripts are to run as and cannot.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    /// global_defs' `script_user` (or a default user) cannot be looked up.
    #[error(transparent)]
    ScriptUser(#[from] IdentityError),
    /// A vrrp_script's `user` (or a FIFO reader's) names no user or group.
    #[error("{script}: {source}")]
    ScriptIdentity {
        /// The script.
        script: String,
        /// What is wrong with its user.
        source: IdentityError,
    },
}

/// The scripts of `c` that may run. As keepalived, a script that cannot be found, or that
/// script security refuses, is disabled (logged with its path and the reason, tracked by
/// nobody, never run) rather than stopping every instance; a user that does not exist stops
/// the configuration.
pub fn admit(c: &Config) -> Result<Admitted, UserError> {
    let notify_as = scripts::default_identity(c.global.script_user.as_ref())?;
    let enforce = c.global.enable_script_security;
    let mut out = Admitted {
        notify_as,
        ..Admitted::default()
    };
    for s in &c.scripts {
        let who = s
            .user
            .as_ref()
            .map(scripts::identity)
            .transpose()
            .map_err(|source| UserError::ScriptIdentity {
                script: format!("vrrp_script {}", s.name),
                source,
            })?
            .or(notify_as);
        let what = format!("vrrp_script {}", s.name);
        if let Some(program) = allowed(&what, &s.command, who, enforce) {
            out.scripts.insert(s.name.clone(), (program, who));
        }
    }
    let notifies = (c.instances.iter().map(|i| (&i.name, &i.notify)))
        .chain(c.sync_groups.iter().map(|g| (&g.name, &g.notify)));
    for (name, notify) in notifies {
        for (keyword, command) in notify.commands() {
            if out.notifiers.contains_key(&command.words) {
                continue;
            }
            let what = format!("{name}: {keyword} ({})", command.location);
            if let Some(program) = allowed(&what, command, notify_as, enforce) {
                out.notifiers.insert(command.words.clone(), program);
            }
        }
    }
    for f in &c.global.notify_fifos {
        let Some((command, user)) = &f.script else {
            continue;
        };
        let what = format!("{}_script ({})", f.keyword, command.location);
        let who = (user.as_ref().map(scripts::identity).transpose())
            .map_err(|source| UserError::ScriptIdentity {
                script: what.clone(),
                source,
            })?
            .or(notify_as);
        if let Some(program) = allowed(&what, command, who, enforce) {
            out.readers.insert(f.path.clone(), (program, who));
        }
    }
    Ok(out)
}

/// The program `command` runs, if it may run; else why not, logged.
fn allowed(what: &str, command: &Command, who: Option<Identity>, enforce: bool) -> Option<PathBuf> {
    // A vrrpd that is not root holds CAP_SETUID to run scripts as other users, never to make
    // one root: even without capabilities (the unit's SecureBits=noroot) uid 0 owns the host's
    // files and processes.
    if who.is_some_and(|w| w.uid == 0) && !nix::unistd::geteuid().is_root() {
        tracing::error!(
            "{what}: runs as root, and vrrpd is not root: a script is never made root \
             (give it another user): disabled"
        );
        return None;
    }
    let program = match scripts::program(command) {
        Ok(program) => program,
        Err(e) => {
            tracing::error!("{what}: {e}: disabled");
            return None;
        }
    };
    let e = match check(&program, command, who.unwrap_or_else(scripts::own_identity)) {
        Ok(()) => return Some(program),
        Err(e) => e,
    };
    if enforce || matches!(e.why, Why::NotRegular | Why::NotExecutable { .. }) {
        tracing::error!("{what}: {e}: refused by script security, disabled");
        return None;
    }
    tracing::warn!("{what}: {e}: unsafe, run all the same (enable_script_security refuses it)");
    Some(program)
}

/// Symbolic links followed in one path at most (Linux's MAXSYMLINKS).
const MAX_LINKS: usize = 40;

/// Why a command is not safe to run.
#[derive(Debug, thiserror::Error)]
#[error("{}: {why}", path.display())]
pub struct Unsafe {
    /// The file or directory at fault.
    pub path: PathBuf,
    /// What is wrong with it.
    pub why: Why,
}

/// What is wrong with a file a command runs through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Why {
    /// Owned by a user other than root: that user can change it.
    #[error("owned by uid {0}, not root")]
    Owner(u32),
    /// Writable by its group, which is not root's.
    #[error("writable by group {gid} (mode {mode:o})")]
    GroupWritable {
        /// The group.
        gid: u32,
        /// Its permission bits.
        mode: u32,
    },
    /// Writable by every user.
    #[error("writable by every user (mode {0:o})")]
    OthersWritable(u32),
    /// The program is not a regular file.
    #[error("not a regular file")]
    NotRegular,
    /// The user the program runs as may not execute it.
    #[error("not executable by uid {uid} gid {gid} (owner uid {owner}, mode {mode:o})")]
    NotExecutable {
        /// Who runs it.
        uid: u32,
        /// Their group.
        gid: u32,
        /// The file's owner.
        owner: u32,
        /// Its permission bits.
        mode: u32,
    },
    /// More links than the kernel follows.
    #[error("more than {MAX_LINKS} symbolic links")]
    Links,
    /// It cannot be looked at.
    #[error("{0}")]
    Io(String),
}

/// Checks `command` as run by `who`, its program being `program` (as [`super::scripts::program`]
/// found it).
pub fn check(program: &Path, command: &Command, who: Identity) -> Result<(), Unsafe> {
    let resolved = resolve(program)?;
    let meta = lstat(&resolved)?;
    if !meta.is_file() {
        return Err(unsafe_at(&resolved, Why::NotRegular));
    }
    if !executable_by(&meta, who) {
        let why = Why::NotExecutable {
            uid: who.uid,
            gid: who.gid,
            owner: meta.uid(),
            mode: meta.mode() & 0o7777,
        };
        return Err(unsafe_at(&resolved, why));
    }
    for arg in &command.words[1..] {
        // An argument names a file when it has a slash and something is there.
        if arg.contains('/') && std::fs::symlink_metadata(arg).is_ok() {
            resolve(Path::new(arg))?;
        }
    }
    Ok(())
}

/// `path` resolved as the kernel resolves it, every directory, file and link it passes checked.
pub fn resolve(path: &Path) -> Result<PathBuf, Unsafe> {
    let absolute = std::path::absolute(path).map_err(|e| unsafe_at(path, io(e)))?;
    walk(&absolute, &mut 0)
}

fn walk(path: &Path, links: &mut usize) -> Result<PathBuf, Unsafe> {
    let mut at = PathBuf::from("/");
    secure(&at, &lstat(&at)?)?;
    for component in path.components() {
        let name = match component {
            Component::Normal(name) => name,
            Component::ParentDir => {
                // `at` has no links in it, so its parent is the kernel's "..".
                at.pop();
                continue;
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => continue,
        };
        let next = at.join(name);
        let meta = lstat(&next)?;
        secure(&next, &meta)?;
        if meta.file_type().is_symlink() {
            *links += 1;
            if *links > MAX_LINKS {
                return Err(unsafe_at(&next, Why::Links));
            }
            let target = std::fs::read_link(&next).map_err(|e| unsafe_at(&next, io(e)))?;
            // An absolute target replaces `at` in the join; a relative one is below it.
            at = walk(&at.join(target), links)?;
        } else {
            at = next;
        }
    }
    Ok(at)
}

/// keepalived's rule for one thing on the way: root's, and writable by root only (a link's own
/// mode means nothing; a sticky directory keeps others from replacing what root put in it).
fn secure(path: &Path, meta: &std::fs::Metadata) -> Result<(), Unsafe> {
    if meta.uid() != 0 {
        return Err(unsafe_at(path, Why::Owner(meta.uid())));
    }
    let mode = meta.mode() & 0o7777;
    let sticky_dir = meta.is_dir() && mode & 0o1000 != 0;
    if meta.file_type().is_symlink() || sticky_dir {
        return Ok(());
    }
    if meta.gid() != 0 && mode & 0o020 != 0 {
        let why = Why::GroupWritable {
            gid: meta.gid(),
            mode,
        };
        return Err(unsafe_at(path, why));
    }
    if mode & 0o002 != 0 {
        return Err(unsafe_at(path, Why::OthersWritable(mode)));
    }
    Ok(())
}

/// Whether `who` may execute the file: root when anyone may; else the owner's, group's or
/// others' bit, the first class `who` is in (supplementary groups are not looked at).
fn executable_by(meta: &std::fs::Metadata, who: Identity) -> bool {
    let mode = meta.mode();
    if who.uid == 0 {
        mode & 0o111 != 0
    } else if meta.uid() == who.uid {
        mode & 0o100 != 0
    } else if meta.gid() == who.gid {
        mode & 0o010 != 0
    } else {
        mode & 0o001 != 0
    }
}

fn lstat(path: &Path) -> Result<std::fs::Metadata, Unsafe> {
    std::fs::symlink_metadata(path).map_err(|e| unsafe_at(path, io(e)))
}

fn io(e: std::io::Error) -> Why {
    Why::Io(e.to_string())
}

fn unsafe_at(path: &Path, why: Why) -> Unsafe {
    Unsafe {
        path: path.to_path_buf(),
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Location;
    use std::os::unix::fs::{symlink, PermissionsExt};

    const ROOT: Identity = Identity { uid: 0, gid: 0 };
    const NOBODY: Identity = Identity {
        uid: 65534,
        gid: 65534,
    };

    fn command(words: &[&str]) -> Command {
        Command {
            words: words.iter().map(|w| w.to_string()).collect(),
            location: Location::default(),
        }
    }

    fn mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A root-owned directory of 0755 with a script of 0755 in it (the tests run as root).
    fn place() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        mode(dir.path(), 0o755);
        let script = dir.path().join("chk.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        mode(&script, 0o755);
        (dir, script)
    }

    fn why(program: &Path, words: &[&str], who: Identity) -> Result<(), (PathBuf, Why)> {
        check(program, &command(words), who).map_err(|e| (e.path, e.why))
    }

    #[test]
    fn a_root_script_in_root_directories_passes() {
        let (_dir, script) = place();
        let s = script.to_str().unwrap();
        assert_eq!(why(&script, &[s], ROOT), Ok(()));
        assert_eq!(why(Path::new("/bin/sh"), &["sh"], ROOT), Ok(()));
    }

    #[test]
    fn a_writable_script_or_directory_is_named() {
        let (dir, script) = place();
        let s = script.to_str().unwrap();
        // Group write by root's own group is keepalived's "safe" too.
        mode(&script, 0o775);
        assert_eq!(std::fs::metadata(&script).unwrap().gid(), 0);
        assert_eq!(why(&script, &[s], ROOT), Ok(()));
        mode(&script, 0o757);
        assert_eq!(
            why(&script, &[s], ROOT).unwrap_err(),
            (script.clone(), Why::OthersWritable(0o757))
        );
        mode(&script, 0o755);
        mode(dir.path(), 0o777);
        assert_eq!(
            why(&script, &[s], ROOT).unwrap_err(),
            (dir.path().to_path_buf(), Why::OthersWritable(0o777))
        );
        // Sticky, as /tmp: nobody else can replace root's script in it.
        mode(dir.path(), 0o1777);
        assert_eq!(why(&script, &[s], ROOT), Ok(()));
    }

    #[test]
    fn group_write_by_a_group_other_than_roots_is_refused() {
        let (_dir, script) = place();
        let s = script.to_str().unwrap();
        mode(&script, 0o775);
        nix::unistd::chown(&script, None, Some(nix::unistd::Gid::from_raw(65534))).unwrap();
        assert_eq!(
            why(&script, &[s], ROOT).unwrap_err(),
            (
                script.clone(),
                Why::GroupWritable {
                    gid: 65534,
                    mode: 0o775
                }
            )
        );
    }

    #[test]
    fn a_script_owned_by_another_user_is_refused() {
        let (_dir, script) = place();
        let s = script.to_str().unwrap();
        nix::unistd::chown(&script, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        assert_eq!(
            why(&script, &[s], ROOT).unwrap_err(),
            (script.clone(), Why::Owner(65534))
        );
    }

    #[test]
    fn a_link_is_followed_and_its_targets_directories_checked() {
        let (dir, script) = place();
        // The link sits in a safe directory; its target in a directory anyone may write.
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        mode(&open, 0o777);
        let target = open.join("real.sh");
        std::fs::copy(&script, &target).unwrap();
        mode(&target, 0o755);
        let link = dir.path().join("link.sh");
        symlink("open/real.sh", &link).unwrap();
        let l = link.to_str().unwrap();
        assert_eq!(
            why(&link, &[l], ROOT).unwrap_err(),
            (open.clone(), Why::OthersWritable(0o777))
        );
        mode(&open, 0o755);
        assert_eq!(why(&link, &[l], ROOT), Ok(()));
        // A link to itself ends.
        let looped = dir.path().join("loop");
        symlink("loop", &looped).unwrap();
        assert_eq!(
            why(&looped, &[looped.to_str().unwrap()], ROOT)
                .unwrap_err()
                .1,
            Why::Links
        );
    }

    #[test]
    fn an_argument_naming_a_file_is_checked_as_the_program_is() {
        let (dir, script) = place();
        let s = script.to_str().unwrap();
        let timeout = Path::new("/usr/bin/timeout");
        assert_eq!(why(timeout, &["/usr/bin/timeout", "1.9", s], ROOT), Ok(()));
        mode(dir.path(), 0o777);
        assert_eq!(
            why(timeout, &["/usr/bin/timeout", "1.9", s], ROOT).unwrap_err(),
            (dir.path().to_path_buf(), Why::OthersWritable(0o777))
        );
        // Words that name nothing are not files.
        assert_eq!(
            why(
                timeout,
                &["timeout", "1", "http://x/readyz", "/no/such"],
                ROOT
            ),
            Ok(())
        );
    }

    #[test]
    fn the_program_must_be_a_file_its_user_may_execute() {
        let (dir, script) = place();
        let s = script.to_str().unwrap();
        mode(&script, 0o700);
        assert_eq!(why(&script, &[s], ROOT), Ok(()));
        assert!(matches!(
            why(&script, &[s], NOBODY).unwrap_err().1,
            Why::NotExecutable { uid: 65534, .. }
        ));
        mode(&script, 0o755);
        assert_eq!(why(&script, &[s], NOBODY), Ok(()));
        let d = dir.path();
        assert_eq!(
            why(d, &[d.to_str().unwrap()], ROOT).unwrap_err(),
            (d.to_path_buf(), Why::NotRegular)
        );
    }
}
