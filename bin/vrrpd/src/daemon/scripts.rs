//! Running programs: track scripts on their interval, notify scripts on state changes. No
//! shell: the words of the configured command are the program and its arguments, as keepalived
//! runs them.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::process::Command as Process;

use super::inputs::Inputs;
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
    /// A path that is not an executable file (keepalived: "not found/accessible").
    #[error("{} is not an executable file", .0.display())]
    NotExecutable(PathBuf),
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

/// The users scripts run as when neither the script nor global_defs names one, the first that
/// exists: keepalived's own default, then the system user ipi-net's package makes.
pub const DEFAULT_USERS: [&str; 2] = ["keepalived_script", "ipi-net-script"];

/// Who scripts run as that name no user of their own: global_defs' `script_user`; else, as
/// keepalived, the first of [`DEFAULT_USERS`] that exists; else vrrpd's own user (`None`), which
/// is logged when that is root.
pub fn default_identity(configured: Option<&User>) -> Result<Option<Identity>, IdentityError> {
    if let Some(user) = configured {
        return identity(user).map(Some);
    }
    for name in DEFAULT_USERS {
        let user = User {
            user: name.to_string(),
            group: None,
        };
        match identity(&user) {
            Ok(who) => return Ok(Some(who)),
            Err(IdentityError::NoUser(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    if nix::unistd::geteuid().is_root() {
        tracing::warn!(
            "scripts run as root: global_defs has no script_user and neither of the users {} \
             exists",
            DEFAULT_USERS.join(" and ")
        );
    }
    Ok(None)
}

/// Who this process is: the identity of a script that runs as vrrpd's own user.
pub fn own_identity() -> Identity {
    Identity {
        uid: nix::unistd::geteuid().as_raw(),
        gid: nix::unistd::getegid().as_raw(),
    }
}

/// The program of a command: as written when it holds a `/`, else found on PATH.
pub fn program(command: &Command) -> Result<PathBuf, ProgramError> {
    let name = &command.words[0];
    if name.contains('/') {
        // keepalived checks every script at start and disables one it cannot find or run, so
        // that it moves no priority; vrrpd does the same rather than count every run failed.
        let path = PathBuf::from(name);
        let executable =
            std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0);
        return if executable {
            Ok(path)
        } else {
            Err(ProgramError::NotExecutable(path))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| ProgramError::NotOnPath(name.clone()))
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

/// How one run of a track script ended (the metrics count each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Exit status 0 within the timeout.
    Ok,
    /// Another exit status (or a signal).
    Failed,
    /// Still running at the timeout: killed.
    Timeout,
    /// Could not be started or waited for.
    Error,
}

impl Outcome {
    /// The metrics' label value.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Timeout => "timeout",
            Outcome::Error => "error",
        }
    }
}

/// Upper bounds, in milliseconds, of the buckets of the track scripts' run times.
pub const DURATION_BUCKETS_MS: [u64; 10] = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000];

/// What the track scripts did since the daemon started, per script: runs by outcome and a
/// histogram of their run times.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptStats {
    /// Runs by outcome.
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Runs at most as long as each bound of [`DURATION_BUCKETS_MS`] (not cumulative).
    pub buckets: [u64; DURATION_BUCKETS_MS.len()],
    /// Runs longer than the last bound.
    pub over: u64,
    /// Total run time in microseconds.
    pub total_us: u64,
}

impl ScriptStats {
    fn record(&mut self, outcome: Outcome, took: Duration) {
        *self.outcomes.entry(outcome).or_default() += 1;
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        match DURATION_BUCKETS_MS.iter().position(|&b| ms <= b) {
            Some(i) => self.buckets[i] += 1,
            None => self.over += 1,
        }
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.total_us = self.total_us.saturating_add(us);
    }

    /// All runs.
    pub fn runs(&self) -> u64 {
        self.outcomes.values().sum()
    }
}

/// The track scripts' statistics, by script name. One daemon runs per process, and its
/// script tasks come and go with reloads while the counts must go on: so they live here.
static STATS: Mutex<BTreeMap<String, ScriptStats>> = Mutex::new(BTreeMap::new());

/// A copy of every track script's statistics.
pub fn stats() -> BTreeMap<String, ScriptStats> {
    STATS.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// Runs a track script once: exit 0 within the timeout is success; a run that lasts longer
/// is killed with its whole process group and counts as a failure.
pub async fn run_once(program: &Path, script: &VrrpScript, who: Option<Identity>) -> bool {
    run_timed(program, script, who).await == Outcome::Ok
}

/// [`run_once`], recording its outcome and run time in [`stats`].
async fn run_timed(program: &Path, script: &VrrpScript, who: Option<Identity>) -> Outcome {
    let start = tokio::time::Instant::now();
    let outcome = run(program, script, who).await;
    STATS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(script.name.clone())
        .or_default()
        .record(outcome, start.elapsed());
    outcome
}

async fn run(program: &Path, script: &VrrpScript, who: Option<Identity>) -> Outcome {
    let mut child = match process(program, &script.command, &[], who).spawn() {
        Ok(child) => child,
        Err(e) => {
            tracing::warn!(
                "vrrp_script {}: cannot run {}: {e}",
                script.name,
                program.display()
            );
            return Outcome::Error;
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
            if status.success() {
                Outcome::Ok
            } else {
                Outcome::Failed
            }
        }
        Ok(Err(e)) => {
            tracing::warn!("vrrp_script {}: {e}", script.name);
            Outcome::Error
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
            Outcome::Timeout
        }
    }
}

/// Runs `script` every interval until the event loop is gone, reporting its result after
/// each run.
pub async fn track(program: PathBuf, script: VrrpScript, who: Option<Identity>, inputs: Inputs) {
    let mut ticks = tokio::time::interval(script.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let ok = run_once(&program, &script, who).await;
        if !inputs.script(script.name.clone(), ok) {
            return;
        }
    }
}

/// Starts a notify command (its program resolved and checked at setup) with `extra`
/// arguments and reaps it in the background.
pub fn notify(program: &Path, command: &Command, extra: &[String], who: Option<Identity>) {
    match process(program, command, extra, who)
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

/// Starts a notify FIFO's reader (its program resolved and checked at setup) with the FIFO's
/// path as its last argument; it is killed if dropped.
pub fn reader(
    program: &Path,
    command: &Command,
    fifo: &Path,
    who: Option<Identity>,
) -> std::io::Result<tokio::process::Child> {
    let fifo = fifo.display().to_string();
    process(program, command, &[fifo], who).spawn()
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

    #[tokio::test]
    async fn runs_are_counted_by_outcome_with_their_time() {
        let mut s = script(&["sleep", "0.05"], 5000);
        s.name = "counted".into();
        let program = program(&s.command).unwrap();
        assert_eq!(run_timed(&program, &s, None).await, Outcome::Ok);
        s.command = command(&["sleep", "10"]);
        s.timeout = Duration::from_millis(30);
        assert_eq!(run_timed(&program, &s, None).await, Outcome::Timeout);
        assert_eq!(
            run_timed(Path::new("/nonexistent/x"), &s, None).await,
            Outcome::Error
        );
        let stats = stats();
        let c = &stats["counted"];
        assert_eq!(c.runs(), 3);
        assert_eq!(c.outcomes[&Outcome::Ok], 1);
        assert_eq!(c.outcomes[&Outcome::Timeout], 1);
        assert_eq!(c.outcomes[&Outcome::Error], 1);
        assert_eq!(c.buckets.iter().sum::<u64>() + c.over, 3);
        // The two that ran slept at least 50 ms and 30 ms.
        assert!(c.total_us >= 80_000, "{c:?}");
    }

    #[test]
    fn durations_land_in_their_bucket() {
        let mut s = ScriptStats::default();
        s.record(Outcome::Failed, Duration::from_millis(5));
        s.record(Outcome::Failed, Duration::from_millis(6));
        s.record(Outcome::Ok, Duration::from_secs(60));
        assert_eq!(s.buckets[0], 1);
        assert_eq!(s.buckets[1], 1);
        assert_eq!(s.over, 1);
        assert_eq!(s.total_us, 60_011_000);
    }

    #[test]
    fn programs_are_found_on_path() {
        assert!(program(&command(&["sh"])).unwrap().is_absolute());
        assert!(program(&command(&["no-such-program-here"])).is_err());
        assert_eq!(
            program(&command(&["/bin/sh"])).unwrap(),
            PathBuf::from("/bin/sh")
        );
        // keepalived disables a script it cannot find or run: "not found/accessible".
        assert_eq!(
            program(&command(&["./no-such-x"])).unwrap_err().to_string(),
            "./no-such-x is not an executable file"
        );
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("chk.sh");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let path = plain.display().to_string();
        assert!(program(&command(&[&path])).is_err(), "not executable");
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
