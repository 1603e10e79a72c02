//! A host's own view of some directories: a mount namespace in which chosen paths are fresh
//! tmpfs mounts or bind mounts of lab directories, for programs that insist on fixed paths
//! (`/run/dbus`, `/etc/ipi-net`, `/run/ipi-net`) while several hosts of one lab run them side by
//! side.
//!
//! A small holder process (`sleep infinity` after `unshare -m`) keeps the namespace alive;
//! [`MountNamespace::command`] enters its mount and network namespaces with `nsenter`, which
//! execs the program, so a [`Daemon`]'s pid is the program's own. Everything started this way
//! also lives in the host's network namespace, so the lab's teardown reaches it.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::{cmd, Daemon, Host, LabError, Output};

/// One mount of a [`MountNamespace`], made in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// A fresh, empty tmpfs on this path.
    Tmpfs(PathBuf),
    /// The directory `dir` with a directory of the lab, `upper`, laid over it (overlayfs):
    /// what is created or changed under `dir` in the namespace goes to the lab, never to the
    /// file system beneath. Lets a [`Mount::Bind`] below a directory of the machine's
    /// (`/etc/ipi-net`) make its mount point without touching the machine.
    Overlay {
        /// The directory seen changed.
        dir: PathBuf,
        /// Where the changes go (its `up` and `work` subdirectories).
        upper: PathBuf,
    },
    /// `from` (a directory or file of the lab) bind-mounted on `to`.
    Bind {
        /// What is seen.
        from: PathBuf,
        /// Where it is seen.
        to: PathBuf,
    },
}

/// A mount namespace of a host. Dropping it stops the holder; programs started in it keep it
/// alive until they end (the lab's teardown ends them).
#[derive(Debug)]
pub struct MountNamespace {
    holder: Daemon,
    dir: PathBuf,
}

impl MountNamespace {
    /// Creates the namespace on `host` with `mounts`; `name` names the holder's log files.
    /// A mount point that does not exist is created as an empty directory first, on the file
    /// system beneath: keep to paths under a [`Mount::Tmpfs`] or a [`Mount::Overlay`] made
    /// before, or already present, so that nothing is left on the machine.
    pub fn new(host: &Host, name: &str, mounts: &[Mount]) -> Result<MountNamespace, LabError> {
        let mut script = String::from("set -e\n");
        for m in mounts {
            match m {
                Mount::Tmpfs(to) => {
                    let to = quote(&to.to_string_lossy());
                    script.push_str(&format!("mkdir -p {to}\nmount -t tmpfs tmpfs {to}\n"));
                }
                Mount::Overlay { dir, upper } => {
                    let d = quote(&dir.to_string_lossy());
                    let up = quote(&upper.join("up").to_string_lossy());
                    let work = quote(&upper.join("work").to_string_lossy());
                    script.push_str(&format!(
                        "mkdir -p {up} {work}\nmount -t overlay overlay -o lowerdir={d},upperdir={up},workdir={work} {d}\n"
                    ));
                }
                Mount::Bind { from, to } => {
                    let (f, t) = (quote(&from.to_string_lossy()), quote(&to.to_string_lossy()));
                    if from.is_dir() {
                        script.push_str(&format!("mkdir -p {t}\n"));
                    } else {
                        script.push_str(&format!("[ -e {t} ] || touch {t}\n"));
                    }
                    script.push_str(&format!("mount --bind {f} {t}\n"));
                }
            }
        }
        script.push_str("echo ready\nexec sleep infinity\n");
        let mut holder = host.spawn(
            name,
            "unshare",
            ["-m", "--propagation", "private", "sh", "-c", &script],
        )?;
        // A mount that fails ends the script (set -e): say so at once, not after the deadline.
        let ready = crate::wait_for(Duration::from_secs(10), Duration::from_millis(10), || {
            holder.stdout().contains("ready") || !holder.running()
        });
        if ready.is_some() && !holder.running() {
            return Err(LabError::Command {
                command: format!("the mount namespace {name} on {}", host.name()),
                status: "its mounts failed".into(),
                stderr: holder.log(),
            });
        }
        if ready.is_none() {
            return Err(LabError::Timeout {
                what: format!(
                    "the mount namespace {name} on {}:\n{}",
                    host.name(),
                    holder.log()
                ),
                seconds: 10.0,
            });
        }
        Ok(MountNamespace {
            holder,
            dir: host.dir().to_path_buf(),
        })
    }

    /// `program` with `args`, to run inside this mount namespace and the host's network one.
    pub fn command<I, S>(&self, program: &str, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = Command::new("nsenter");
        c.args(["-t", &self.holder.pid().to_string(), "-m", "-n", program])
            .args(args);
        c
    }

    /// Runs `program` in the namespace to completion; a non-zero exit is not an error here.
    pub fn run<I, S>(&self, program: &str, args: I) -> Result<Output, LabError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        cmd::output(&mut self.command(program, args))
    }

    /// Starts a long-running program in the namespace; its output goes to `NAME.out` and
    /// `NAME.err` in the host's directory.
    pub fn spawn<I, S>(&self, name: &str, program: &str, args: I) -> Result<Daemon, LabError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Daemon::start(name, self.command(program, args), &self.dir)
    }
}

/// `text` as one shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting() {
        assert_eq!(quote("/run/a b"), "'/run/a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
