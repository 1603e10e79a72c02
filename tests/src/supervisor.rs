//! The lab's stand-in for systemd: one node's units ([`Units`]), started, reloaded, stopped
//! and watched the way systemd would, inside the node's [`MountNamespace`].
//!
//! A unit is started as systemd would start it: `ConditionPathExists=`, `RuntimeDirectory=`,
//! the environment from `EnvironmentFile=` and `Environment=`, `ExecStartPre=`, then
//! `ExecStart=` (a daemon, or run to completion for `Type=oneshot`), `ExecStartPost=`;
//! `ExecStopPost=` once the main process has ended, stopped or by itself.
//! `Type=notify` units get a `NOTIFY_SOCKET` and the next unit starts once they said
//! `READY=1`. `/usr/bin/PROGRAM` of ours ([`PROGRAMS`]) is the freshly built binary in the
//! options' `bin_dir`, which also comes first on PATH (the track scripts call `lb-proxy` by
//! name); anything else runs as the unit says. `systemctl` in a command line acts on the
//! node's units (`start`, `stop`, `restart`, `try-restart`, `reload`, `kill --signal=`...,
//! the main process only). A `.path` unit
//! (listed, or named by a service's `Also=`) is emulated by [`Units::poll`], which the cluster
//! calls every 100 ms: its service starts again when the content of its `PathChanged=` /
//! `PathModified=` files changes. `Restart=` is emulated there too ([`crate::restart`]): a
//! daemon whose main process ended is started again `RestartSec=` later when its unit's
//! policy and exit status lists say so, as a oneshot that failed; every start counts against
//! the unit's start limit (`StartLimitIntervalSec=`, `StartLimitBurst=`), past which the unit
//! stays failed. A unit stopped (by a step, `systemctl stop`, or the node's power cut) is not
//! restarted.
//!
//! It is apart from [`crate::cluster`] because it knows nothing of hosts, roles, VIPs or
//! steps: it is given a mount namespace, a lab directory and the contrib units, and runs
//! them; the cluster decides which units a node runs, in which order, and what to observe.

use std::collections::BTreeMap;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ipi_lab::mounts::MountNamespace;
use ipi_lab::{wait_for, Daemon};

use crate::error::ClusterError;
use crate::restart::{Exit, StartLimit};
use crate::units::{Exec, Unit};

/// The programs of ours that `/usr/bin/NAME` in a unit means.
pub const PROGRAMS: [&str; 5] = ["vrrpd", "lb-proxy", "mdns-publish", "dns-render", "ipam"];

/// How long a `Type=notify` unit has to say READY=1.
const READY: Duration = Duration::from_secs(30);

type OsArg = std::ffi::OsString;

/// A `.path` unit being emulated: the files (in the lab) and their content when last seen.
#[derive(Debug)]
pub(crate) struct Watch {
    service: String,
    files: Vec<PathBuf>,
    seen: Vec<Option<Vec<u8>>>,
}

fn contents(files: &[PathBuf]) -> Vec<Option<Vec<u8>>> {
    files.iter().map(|f| std::fs::read(f).ok()).collect()
}

/// One node's units: systemd's part, as far as the lab needs it.
#[derive(Debug)]
pub(crate) struct Units {
    pub(crate) ns: MountNamespace,
    pub(crate) dir: PathBuf,
    pub(crate) bin_dir: PathBuf,
    pub(crate) systemd: PathBuf,
    pub(crate) units: BTreeMap<String, Unit>,
    pub(crate) running: BTreeMap<String, Daemon>,
    /// The NOTIFY_SOCKET of each running `Type=notify` unit (later messages, RELOADING=1 and
    /// READY=1 around a reload, go there too).
    pub(crate) notify: BTreeMap<String, UnixDatagram>,
    pub(crate) order: Vec<String>,
    pub(crate) watches: Vec<Watch>,
    /// What the oneshot runs printed, for a failing step's message.
    pub(crate) oneshots: String,
    /// `Restart=`: the units to start again, and when.
    pub(crate) pending: BTreeMap<String, Instant>,
    /// Each unit's recent starts, for its start limit.
    pub(crate) limits: BTreeMap<String, StartLimit>,
    /// Units failed for good (start-limit-hit, or ended with no restart due): why.
    pub(crate) failed: BTreeMap<String, String>,
    /// Every main process that ended by itself: the unit, how, when, and whether `Restart=`
    /// started it again.
    pub(crate) ended: Vec<Ended>,
    /// The process group of a unit whose main process ended, while what it forked is still
    /// there (systemd's control group not yet empty), and since when.
    pub(crate) leftovers: BTreeMap<String, (u32, Instant)>,
}

/// How long a restart waits for what the ended main process forked to be gone (systemd waits
/// for the unit's control group to empty, SIGKILLing it after `TimeoutStopSec=`).
const EMPTY: Duration = Duration::from_secs(10);

/// Whether a process group still has members (zombies not yet reaped included).
fn group_alive(pgid: u32) -> bool {
    let pgid = nix::unistd::Pid::from_raw(i32::try_from(pgid).unwrap_or(i32::MAX));
    nix::sys::signal::killpg(pgid, None).is_ok()
}

/// A unit's main process that ended without a stop job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// The unit.
    pub unit: String,
    /// How it ended.
    pub exit: Exit,
    /// When it was seen ended.
    pub at: Instant,
    /// Whether its `Restart=` settings start it again.
    pub restart: bool,
}

impl Units {
    pub(crate) fn unit(&mut self, name: &str) -> Result<Unit, ClusterError> {
        if let Some(u) = self.units.get(name) {
            return Ok(u.clone());
        }
        let u = Unit::read(&self.systemd.join(name))?;
        self.units.insert(name.to_string(), u.clone());
        Ok(u)
    }

    /// A path in the node's view, in the lab (the mounted directories only).
    fn lab_path(&self, path: &Path) -> Option<PathBuf> {
        [
            ("/etc/ipi-net", "etc"),
            ("/run/ipi-net", "run"),
            ("/run/NetworkManager", "nm"),
        ]
        .iter()
        .find_map(|(view, lab)| {
            let rest = path.strip_prefix(view).ok()?;
            Some(self.dir.join(lab).join(rest))
        })
    }

    fn program(&self, word: &str) -> String {
        match word.strip_prefix("/usr/bin/") {
            Some(p) if PROGRAMS.contains(&p) => self.bin_dir.join(p).display().to_string(),
            _ => word.to_string(),
        }
    }

    fn command(&self, words: &[String], env: &BTreeMap<String, String>) -> Command {
        let program = self.program(&words[0]);
        let mut c = self.ns.command(&program, &words[1..]);
        let path = format!(
            "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            self.bin_dir.display()
        );
        c.env_clear()
            .env("PATH", path)
            .env("LANG", "C.UTF-8")
            .envs(env);
        c
    }

    pub(crate) fn start(&mut self, name: &str) -> Result<(), ClusterError> {
        if name.ends_with(".path") {
            return self.watch(name);
        }
        let unit = self.unit(name)?;
        self.pending.remove(name);
        if !self
            .limits
            .entry(name.to_string())
            .or_default()
            .allow(Instant::now(), &unit.restart)
        {
            let why = format!(
                "start-limit-hit: more than {} starts in {:?}",
                unit.restart.limit_burst, unit.restart.limit_interval
            );
            self.failed.insert(name.to_string(), why.clone());
            return Err(ClusterError::Step(format!("{name}: {why}")));
        }
        self.failed.remove(name);
        for also in unit.also.iter().filter(|a| a.ends_with(".path")) {
            self.watch(also)?;
        }
        for (path, negated) in &unit.conditions {
            let exists = match self.lab_path(path) {
                Some(p) => p.exists(),
                None => {
                    self.ns
                        .run("test", [OsArg::from("-e"), path.as_os_str().into()])?
                        .success
                }
            };
            if exists == *negated {
                self.oneshots.push_str(&format!(
                    "{name}: not started, ConditionPathExists={}{} is false\n",
                    if *negated { "!" } else { "" },
                    path.display()
                ));
                return Ok(());
            }
        }
        for d in &unit.runtime_directories {
            self.ns.run("mkdir", ["-p", &format!("/run/{d}")])?;
        }
        let files = |p: &Path| self.lab_path(p);
        let mut env = unit.env(&files)?;
        for e in &unit.exec_start_pre {
            self.exec(&unit, e, &env)?;
        }
        if unit.kind == "oneshot" {
            for e in &unit.exec_start {
                self.exec(&unit, e, &env)?;
            }
        } else {
            let [e] = unit.exec_start.as_slice() else {
                return Err(ClusterError::Step(format!(
                    "{}: Type={} needs exactly one ExecStart=",
                    unit.file.display(),
                    unit.kind
                )));
            };
            let (daemon, socket) = self.spawn(&unit, e, &env)?;
            env.insert("MAINPID".into(), daemon.pid().to_string());
            self.running.insert(name.to_string(), daemon);
            if let Some(socket) = socket {
                self.notify.insert(name.to_string(), socket);
            }
        }
        for e in &unit.exec_start_post {
            self.exec(&unit, e, &env)?;
        }
        Ok(())
    }

    /// Starts a daemon; a `Type=notify` one is waited for until it says READY=1.
    fn spawn(
        &self,
        unit: &Unit,
        e: &Exec,
        env: &BTreeMap<String, String>,
    ) -> Result<(Daemon, Option<UnixDatagram>), ClusterError> {
        let words = e.expand(&unit.name, env)?;
        let stem = unit.name.trim_end_matches(".service");
        let mut c = self.command(&words, env);
        // A process group of its own: what it forks stays in it, as in a unit's control group.
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        let socket = if unit.kind == "notify" {
            let path = self.dir.join(format!("{stem}.notify"));
            let _ = std::fs::remove_file(&path);
            let s = UnixDatagram::bind(&path)
                .map_err(ClusterError::io(format!("bind {}", path.display())))?;
            c.env("NOTIFY_SOCKET", &path);
            Some(s)
        } else {
            None
        };
        let mut daemon = Daemon::start(stem, c, &self.dir)?;
        if let Some(s) = &socket {
            let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
            let mut buf = [0u8; 4096];
            let ready = wait_for(READY, Duration::ZERO, || {
                let got = s.recv(&mut buf).ok().is_some_and(|n| {
                    String::from_utf8_lossy(&buf[..n])
                        .lines()
                        .any(|l| l == "READY=1")
                });
                got || !daemon.running()
            });
            if ready.is_none() || !daemon.running() {
                return Err(ClusterError::Step(format!(
                    "{}:{}: {} did not say READY=1:\n{}",
                    e.file.display(),
                    e.line,
                    unit.name,
                    daemon.log()
                )));
            }
        }
        Ok((daemon, socket))
    }

    /// Runs a command line to completion.
    fn exec(
        &mut self,
        unit: &Unit,
        e: &Exec,
        env: &BTreeMap<String, String>,
    ) -> Result<(), ClusterError> {
        let words = e.expand(&unit.name, env)?;
        let (ok, said) = if words[0].ends_with("/systemctl") {
            (self.systemctl(&words[1..], e)?, String::new())
        } else {
            let out = self
                .command(&words, env)
                .output()
                .map_err(ClusterError::io(format!("run {}", words.join(" "))))?;
            (
                out.status.success(),
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            )
        };
        self.oneshots.push_str(&format!(
            "--- {} ({}): {}\n{said}",
            unit.name,
            if ok { "ok" } else { "failed" },
            words.join(" ")
        ));
        if !ok && !e.ignore_failure {
            return Err(ClusterError::Step(format!(
                "{}:{}: `{}` failed: {said}",
                e.file.display(),
                e.line,
                words.join(" ")
            )));
        }
        Ok(())
    }

    /// `systemctl [OPTIONS] VERB UNIT...` on this node's units; false for what systemctl
    /// would fail.
    fn systemctl(&mut self, args: &[String], e: &Exec) -> Result<bool, ClusterError> {
        let mut words = args.iter().filter(|a| !a.starts_with('-'));
        let verb = words.next().map(String::as_str).unwrap_or("");
        let targets: Vec<String> = words
            .map(|u| {
                if u.contains('.') {
                    u.clone()
                } else {
                    format!("{u}.service")
                }
            })
            .collect();
        for t in targets {
            let running = self.running.contains_key(&t);
            match verb {
                "start" if !running => self.start(&t)?,
                "start" => {}
                "stop" => self.stop(&t),
                "restart" | "try-restart" if verb == "restart" || running => {
                    self.stop(&t);
                    self.start(&t)?;
                }
                "try-restart" => {}
                "reload" | "try-reload-or-restart" | "reload-or-restart" if running => {
                    self.reload(&t)?;
                }
                "reload" => return Ok(false),
                "reload-or-restart" => self.start(&t)?,
                "try-reload-or-restart" => {}
                "kill" => match self.running.get(&t) {
                    Some(d) => d
                        .signal(kill_signal(args, e)?)
                        .map_err(|why| ClusterError::Step(format!("systemctl kill {t}: {why}")))?,
                    None => return Ok(false),
                },
                other => {
                    return Err(ClusterError::Step(format!(
                        "{}:{}: systemctl {other} is not emulated in the lab",
                        e.file.display(),
                        e.line
                    )))
                }
            }
        }
        Ok(true)
    }

    pub(crate) fn reload(&mut self, name: &str) -> Result<(), ClusterError> {
        let unit = self.unit(name)?;
        let files = |p: &Path| self.lab_path(p);
        let mut env = unit.env(&files)?;
        if let Some(d) = self.running.get(name) {
            env.insert("MAINPID".into(), d.pid().to_string());
        }
        for e in &unit.exec_reload {
            self.exec(&unit, e, &env)?;
        }
        Ok(())
    }

    pub(crate) fn stop(&mut self, name: &str) {
        self.pending.remove(name);
        self.notify.remove(name);
        if let Some(mut d) = self.running.remove(name) {
            d.stop();
            self.stop_post(name);
        }
    }

    /// Stops every unit, the last started first (SIGTERM).
    pub(crate) fn stop_all(&mut self) {
        self.watches.clear();
        self.pending.clear();
        for name in self.order.clone().iter().rev() {
            self.stop(name);
        }
    }

    /// Kills every unit at once (SIGKILL), every process of each as a power cut does: what a
    /// main process forked too (keepalived's VRRP child would otherwise see its parent die and
    /// resign gracefully). The processes are listed before any is killed, while they are
    /// still their parents' children.
    pub(crate) fn kill_all(&mut self) {
        self.watches.clear();
        self.pending.clear();
        let pids: Vec<u32> = self.running.values().flat_map(Daemon::pids).collect();
        for p in pids {
            let p = nix::unistd::Pid::from_raw(i32::try_from(p).unwrap_or(i32::MAX));
            let _ = nix::sys::signal::kill(p, nix::sys::signal::Signal::SIGKILL);
        }
        for (_, mut d) in std::mem::take(&mut self.running) {
            d.stop();
        }
    }

    /// Starts emulating a `.path` unit (once).
    fn watch(&mut self, name: &str) -> Result<(), ClusterError> {
        let unit = self.unit(name)?;
        let service = unit
            .activates
            .clone()
            .unwrap_or_else(|| name.trim_end_matches(".path").to_string() + ".service");
        if self.watches.iter().any(|w| w.service == service) {
            return Ok(());
        }
        let mut files = Vec::new();
        for p in &unit.watches {
            files.push(self.lab_path(p).ok_or_else(|| {
                ClusterError::Step(format!(
                    "{}: {} is outside what the lab mounts (/etc/ipi-net, /run/ipi-net, \
                     /run/NetworkManager)",
                    unit.file.display(),
                    p.display()
                ))
            })?);
        }
        let seen = contents(&files);
        self.watches.push(Watch {
            service,
            files,
            seen,
        });
        Ok(())
    }

    /// One round of the emulated path units: a service whose files changed runs again.
    pub(crate) fn poll(&mut self) {
        // Read what running units said since (RELOADING=1 / READY=1 around each reload), as
        // systemd does: a datagram socket nobody reads holds only a few messages (the kernel's
        // max_dgram_qlen, 10 here), and then a unit's next sd_notify blocks it for good.
        let mut buf = [0u8; 4096];
        for socket in self.notify.values() {
            if socket.set_nonblocking(true).is_ok() {
                while socket.recv(&mut buf).is_ok() {}
            }
        }
        let mut due = Vec::new();
        for w in &mut self.watches {
            let now = contents(&w.files);
            if now != w.seen {
                w.seen = now;
                due.push(w.service.clone());
            }
        }
        for service in due {
            if let Err(e) = self.start(&service) {
                self.oneshots
                    .push_str(&format!("{service} (path unit): {e}\n"));
                self.ended(&service, Exit::Code(1));
            }
        }
        self.reap();
        self.restart_due();
    }

    /// Starts every unit of [`Units::order`] again, in that order (a node powered on).
    pub(crate) fn start_all(&mut self) -> Result<(), ClusterError> {
        for name in self.order.clone() {
            if !self.running.contains_key(&name) {
                self.start(&name)?;
            }
        }
        Ok(())
    }

    /// The daemons whose main process ended by themselves: out of the running ones, and
    /// started again later when their `Restart=` says so.
    fn reap(&mut self) {
        let dead: Vec<(String, Exit)> = self
            .running
            .iter_mut()
            .filter_map(|(n, d)| d.exit_status().map(|s| (n.clone(), Exit::of(s))))
            .collect();
        for (name, exit) in dead {
            if let Some(d) = self.running.remove(&name) {
                self.oneshots.push_str(&format!(
                    "{name}: main process exited, {exit}\n{}",
                    d.stderr()
                ));
                // systemd: the rest of the unit's processes get KillSignal= (SIGTERM); the
                // unit starts again once they are gone.
                let pgid = nix::unistd::Pid::from_raw(i32::try_from(d.pid()).unwrap_or(i32::MAX));
                let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGTERM);
                self.leftovers
                    .insert(name.clone(), (d.pid(), Instant::now()));
            }
            self.notify.remove(&name);
            self.stop_post(&name);
            self.ended(&name, exit);
        }
    }

    /// `ExecStopPost=`: run once a daemon's main process has ended, by itself or stopped, as
    /// systemd does; a command that fails is written to the log, as systemd logs it.
    fn stop_post(&mut self, name: &str) {
        let Ok(unit) = self.unit(name) else {
            return;
        };
        let files = |p: &Path| self.lab_path(p);
        let env = match unit.env(&files) {
            Ok(env) => env,
            Err(e) => {
                return self
                    .oneshots
                    .push_str(&format!("{name} (ExecStopPost=): {e}\n"))
            }
        };
        for e in &unit.exec_stop_post {
            if let Err(e) = self.exec(&unit, e, &env) {
                self.oneshots
                    .push_str(&format!("{name} (ExecStopPost=): {e}\n"));
            }
        }
    }

    /// Records a unit's end and schedules its restart when its settings say so.
    fn ended(&mut self, name: &str, exit: Exit) {
        let restart = match self.unit(name) {
            Ok(u) => u.restart.shall_restart(exit) && !self.failed.contains_key(name),
            Err(_) => false,
        };
        let at = Instant::now();
        if restart {
            let delay = self
                .units
                .get(name)
                .map(|u| u.restart.delay)
                .unwrap_or_default();
            self.pending.insert(name.to_string(), at + delay);
        } else {
            self.failed
                .entry(name.to_string())
                .or_insert_with(|| format!("ended with {exit}, no restart"));
        }
        self.ended.push(Ended {
            unit: name.to_string(),
            exit,
            at,
            restart,
        });
    }

    /// Starts the units whose `RestartSec=` has passed; a start that fails is an end too.
    fn restart_due(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(n, _)| n.clone())
            .collect();
        for name in due {
            if let Some((pgid, since)) = self.leftovers.get(&name) {
                if group_alive(*pgid) && since.elapsed() < EMPTY {
                    continue;
                }
                self.leftovers.remove(&name);
            }
            self.pending.remove(&name);
            if let Err(e) = self.start(&name) {
                self.oneshots.push_str(&format!("{name} (Restart=): {e}\n"));
                // What a failed start left running is not the unit's main process any more.
                self.stop(&name);
                self.ended(&name, Exit::Code(1));
            }
        }
    }
}

/// The signal of `systemctl kill --signal=NAME` (`SIGHUP`, `HUP`, ...; SIGTERM without one).
fn kill_signal(args: &[String], e: &Exec) -> Result<nix::sys::signal::Signal, ClusterError> {
    let name = args
        .iter()
        .find_map(|a| a.strip_prefix("--signal="))
        .unwrap_or("SIGTERM");
    let full = if name.starts_with("SIG") {
        name.to_owned()
    } else {
        format!("SIG{name}")
    };
    full.parse().map_err(|_| {
        ClusterError::Step(format!(
            "{}:{}: systemctl kill --signal={name}: not a signal",
            e.file.display(),
            e.line
        ))
    })
}
