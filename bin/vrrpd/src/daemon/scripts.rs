//! Running programs: track scripts on their interval, notify scripts on state changes. No
//! shell: the words of the configured command are the program and its arguments, as keepalived
//! runs them.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command as Process;
use tokio::sync::mpsc;

use crate::config::{Command, User, VrrpScript};

/// Who a program runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

/// Why a `user [group]` cannot be run as.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The user database cannot be read.
    #[error("user `{user}`: {errno}")]
    UserLookup {
        /// The user.
        user: String,
        /// What the lookup said.
        errno: nix::errno::Errno,
    },
    /// No such user.
    #[error("user `{0}` does not exist")]
    NoUser(String),
    /// The group database cannot be read.
    #[error("group `{group}`: {errno}")]
    GroupLookup {
        /// The group.
        group: String,
        /// What the lookup said.
        errno: nix::errno::Errno,
    },
    /// No such group.
    #[error("group `{0}` does not exist")]
    NoGroup(String),
}

/// Why a script cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    /// A bare program name that no PATH directory holds.
    #[error("`{0}` is not found on PATH")]
    NotOnPath(String),
    /// The program or a directory above it cannot be looked at.
    #[error("{}: {source}", path.display())]
    Metadata {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `enable_script_security` refuses it.
    #[error(
        "{} can be changed by a user other than root (owner uid {uid}, mode {mode:o}): \
         enable_script_security refuses to run {}",
        path.display(),
        program.display()
    )]
    Insecure {
        /// The file or directory a user other than root can change.
        path: PathBuf,
        /// Its owner.
        uid: u32,
        /// Its permission bits.
        mode: u32,
        /// The program refused.
        program: PathBuf,
    },
}

/// Resolves `user [group]` to ids.
pub fn identity(user: &User) -> Result<Identity, IdentityError> {
    let u = nix::unistd::User::from_name(&user.user)
        .map_err(|errno| IdentityError::UserLookup {
            user: user.user.clone(),
            errno,
        })?
        .ok_or_else(|| IdentityError::NoUser(user.user.clone()))?;
    let gid = match &user.group {
        None => u.gid.as_raw(),
        Some(g) => nix::unistd::Group::from_name(g)
            .map_err(|errno| IdentityError::GroupLookup {
                group: g.clone(),
                errno,
            })?
            .ok_or_else(|| IdentityError::NoGroup(g.clone()))?
            .gid
            .as_raw(),
    };
    Ok(Identity {
        uid: u.uid.as_raw(),
        gid,
    })
}

/// The program of a command: as written when it holds a `/`, else found on PATH.
pub fn program(command: &Command) -> Result<PathBuf, ProgramError> {
    let name = &command.words[0];
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| ProgramError::NotOnPath(name.clone()))
}

/// keepalived's `enable_script_security`: the program, and every directory above it, must be
/// writable by root only, or a user could make root run anything.
pub fn check_secure(program: &Path) -> Result<(), ProgramError> {
    let mut at = Some(program);
    while let Some(p) = at {
        let meta = std::fs::metadata(p).map_err(|source| ProgramError::Metadata {
            path: p.to_path_buf(),
            source,
        })?;
        // A sticky directory (/tmp) lets nobody replace root's files in it.
        let sticky_dir = meta.is_dir() && meta.mode() & 0o1000 != 0;
        let writable_by_others = meta.mode() & 0o022 != 0 && !sticky_dir;
        if meta.uid() != 0 || writable_by_others {
            return Err(ProgramError::Insecure {
                path: p.to_path_buf(),
                uid: meta.uid(),
                mode: meta.mode() & 0o7777,
                program: program.to_path_buf(),
            });
        }
        at = p.parent();
    }
    Ok(())
}

fn process(program: &Path, command: &Command, extra: &[String], who: Option<Identity>) -> Process {
    let mut p = Process::new(program);
    p.args(&command.words[1..])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(who) = who {
        p.uid(who.uid).gid(who.gid);
    }
    p
}

/// Runs a track script once: exit 0 within the timeout is success; a run that lasts longer
/// is killed with its whole process group and counts as a failure.
pub async fn run_once(program: &Path, script: &VrrpScript, who: Option<Identity>) -> bool {
    let mut child = match process(program, &script.command, &[], who).spawn() {
        Ok(child) => child,
        Err(e) => {
            tracing::warn!(
                "vrrp_script {}: cannot run {}: {e}",
                script.name,
                program.display()
            );
            return false;
        }
    };
    match tokio::time::timeout(script.timeout, child.wait()).await {
        Ok(Ok(status)) => {
            // 126 and 127 are the shell's "cannot run" and "not found" (a wrapper script whose
            // `lb-proxy` is not on PATH): a failed check all the same, but one the operator
            // must be told of, since the script's own output goes nowhere.
            if let Some(code @ (126 | 127)) = status.code() {
                tracing::warn!(
                    "vrrp_script {}: {} exited {code}: a command it runs cannot be found or run",
                    script.name,
                    program.display()
                );
            }
            status.success()
        }
        Ok(Err(e)) => {
            tracing::warn!("vrrp_script {}: {e}", script.name);
            false
        }
        Err(_) => {
            tracing::info!(
                "vrrp_script {}: timed out after {:?}, killed",
                script.name,
                script.timeout
            );
            if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = child.wait().await;
            false
        }
    }
}

/// Runs `script` every interval until the receiver is gone, sending `(name, ok)` after each run.
pub async fn track(
    program: PathBuf,
    script: VrrpScript,
    who: Option<Identity>,
    results: mpsc::UnboundedSender<(String, bool)>,
) {
    let mut ticks = tokio::time::interval(script.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let ok = run_once(&program, &script, who).await;
        if results.send((script.name.clone(), ok)).is_err() {
            return;
        }
    }
}

/// Starts a notify command with `extra` arguments and reaps it in the background.
pub fn notify(command: &Command, extra: &[String], who: Option<Identity>) {
    let program = match program(command) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!("notify at {}: {e}", command.location);
            return;
        }
    };
    match process(&program, command, extra, who)
        .kill_on_drop(false)
        .spawn()
    {
        Ok(mut child) => {
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
        }
        Err(e) => tracing::warn!("notify {}: {e}", program.display()),
    }
}

/// How long a notify or track script may take before shutdown stops waiting for it.
pub const GRACE: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Location;

    fn command(words: &[&str]) -> Command {
        Command {
            words: words.iter().map(|w| w.to_string()).collect(),
            location: Location::default(),
        }
    }

    fn script(words: &[&str], timeout_ms: u64) -> VrrpScript {
        VrrpScript {
            name: "s".into(),
            command: command(words),
            interval: Duration::from_secs(1),
            timeout: Duration::from_millis(timeout_ms),
            weight: 0,
            rise: 1,
            fall: 1,
            user: None,
            init_fail: false,
            location: Location::default(),
        }
    }

    #[tokio::test]
    async fn exit_status_and_timeout() {
        let ok = script(&["true"], 5000);
        assert!(run_once(&program(&ok.command).unwrap(), &ok, None).await);
        let bad = script(&["false"], 5000);
        assert!(!run_once(&program(&bad.command).unwrap(), &bad, None).await);
        let slow = script(&["sleep", "10"], 100);
        let start = std::time::Instant::now();
        assert!(!run_once(&program(&slow.command).unwrap(), &slow, None).await);
        assert!(start.elapsed() < Duration::from_secs(5));
        let missing = script(&["/nonexistent/x"], 100);
        assert!(!run_once(Path::new("/nonexistent/x"), &missing, None).await);
    }

    #[test]
    fn programs_are_found_on_path() {
        assert!(program(&command(&["sh"])).unwrap().is_absolute());
        assert!(program(&command(&["no-such-program-here"])).is_err());
        assert_eq!(program(&command(&["./x"])).unwrap(), PathBuf::from("./x"));
    }

    #[test]
    fn script_security() {
        assert!(check_secure(Path::new("/bin/sh")).is_ok());
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("chk.sh");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_secure(&script).unwrap_err().to_string();
        assert!(
            e.contains("can be changed by a user other than root"),
            "{e}"
        );
    }

    #[test]
    fn users_resolve() {
        let root = identity(&User {
            user: "root".into(),
            group: None,
        })
        .unwrap();
        assert_eq!(root, Identity { uid: 0, gid: 0 });
        assert!(identity(&User {
            user: "no-such-user-x".into(),
            group: None
        })
        .is_err());
    }
}
