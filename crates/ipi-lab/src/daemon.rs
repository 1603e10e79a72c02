//! Long-running processes in a host: daemons under test, and packet captures.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::cmd::{describe, LabError};
use crate::wait_for;

/// How long a daemon gets between SIGTERM and SIGKILL when it is stopped.
const GRACE: Duration = Duration::from_secs(5);

/// A process running in a host. Dropping it stops it (SIGTERM, then SIGKILL).
#[derive(Debug)]
pub struct Daemon {
    name: String,
    command: String,
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

/// CPU time and memory of a process and its descendants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// User plus system CPU time.
    pub cpu: Duration,
    /// Resident set size, summed over the processes.
    pub rss_kib: u64,
    /// How many processes.
    pub processes: usize,
}

impl Daemon {
    /// Starts a prepared command (from [`Host::command`](crate::Host::command) or
    /// [`MountNamespace::command`](crate::mounts::MountNamespace::command), with the
    /// environment it needs) as a daemon whose output goes to `NAME.out` / `NAME.err` in `dir`.
    pub fn start(name: &str, mut command: Command, dir: &Path) -> Result<Daemon, LabError> {
        let stdout = dir.join(format!("{name}.out"));
        let stderr = dir.join(format!("{name}.err"));
        let create =
            |p: &Path| File::create(p).map_err(LabError::io(format!("create {}", p.display())));
        command
            .stdin(Stdio::null())
            .stdout(create(&stdout)?)
            .stderr(create(&stderr)?);
        let line = describe(&command);
        let child = command
            .spawn()
            .map_err(LabError::io(format!("start `{line}`")))?;
        Ok(Daemon {
            name: name.to_string(),
            command: line,
            child,
            stdout,
            stderr,
        })
    }

    /// Its name in the lab.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its process id (`ip netns exec` execs the program, so this is the program's).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What it printed on stdout so far.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Both outputs, labelled, for a failing test's message.
    pub fn log(&self) -> String {
        format!(
            "--- {} ({}) stdout:\n{}--- stderr:\n{}",
            self.name,
            self.command,
            self.stdout(),
            self.stderr()
        )
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// How it ended, once it has (without waiting): its exit status or the signal that
    /// killed it.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends a signal (SIGKILL for a crash, SIGHUP for a reload...).
    pub fn signal(&self, signal: Signal) -> Result<(), LabError> {
        kill(pid(self.child.id()), signal).map_err(|e| LabError::Io {
            what: format!("send {signal} to {} ({})", self.name, self.command),
            source: e.into(),
        })
    }

    /// Waits up to `timeout` for it to exit; its exit code, or `None` if killed by a signal.
    pub fn wait(&mut self, timeout: Duration) -> Result<Option<i32>, LabError> {
        let mut status = None;
        wait_for(timeout, Duration::from_millis(10), || {
            status = self.child.try_wait().ok().flatten();
            status.is_some()
        });
        match status {
            Some(s) => Ok(s.code()),
            None => Err(LabError::Timeout {
                what: format!("{} ({}) to exit", self.name, self.command),
                seconds: timeout.as_secs_f64(),
            }),
        }
    }

    /// SIGTERM, then SIGKILL after a grace period; returns the exit code when it exited by
    /// itself.
    pub fn stop(&mut self) -> Option<i32> {
        if !self.running() {
            return self.child.try_wait().ok().flatten().and_then(|s| s.code());
        }
        let _ = self.signal(Signal::SIGTERM);
        match self.wait(GRACE) {
            Ok(code) => code,
            Err(_) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                None
            }
        }
    }

    /// CPU time and RSS of the process and everything it forked.
    pub fn usage(&self) -> Usage {
        process_tree_usage(self.child.id(), &processes())
    }

    /// [`Daemon::usage`] of each of `daemons`, from one reading of the process table: a lab of
    /// hundreds of daemons read one at a time reads /proc hundreds of times over, which on a
    /// machine they keep busy took minutes.
    pub fn usage_of<'a>(daemons: impl IntoIterator<Item = &'a Daemon>) -> Vec<Usage> {
        let procs = processes();
        (daemons.into_iter())
            .map(|d| process_tree_usage(d.child.id(), &procs))
            .collect()
    }

    /// The UDP datagrams the process's network namespace dropped so far because a socket's
    /// receive buffer was full (IPv4 and IPv6): a rate of them tells a reader that could not
    /// keep up (a machine out of CPU) from a protocol that lost its packets.
    pub fn udp_drops(&self) -> u64 {
        let read = |file: &str| std::fs::read_to_string(format!("/proc/{}/net/{file}", self.pid()));
        let v4 = read("snmp").ok().and_then(|t| udp_rcvbuf_errors(&t));
        let v6 = read("snmp6").ok().and_then(|t| udp6_rcvbuf_errors(&t));
        v4.unwrap_or(0) + v6.unwrap_or(0)
    }

    /// The process and everything it forked that still runs, the process first: what a
    /// systemd unit's control group holds (keepalived's VRRP child, haproxy's worker), for a
    /// signal to all of them.
    pub fn pids(&self) -> Vec<u32> {
        tree(self.child.id(), &processes())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

fn pid(id: u32) -> Pid {
    Pid::from_raw(i32::try_from(id).unwrap_or(i32::MAX))
}

/// One process's parent, CPU ticks and RSS pages, from /proc/PID/stat.
fn stat(text: &str) -> Option<(u32, u64, u64)> {
    // The command name is in parentheses and may hold spaces: fields count from after it.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) ... utime(11) stime(12) ... rss(21).
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let rss = fields.get(21)?.parse().ok()?;
    Some((ppid, utime + stime, rss))
}

/// Every process's parent, CPU ticks and RSS pages, by pid.
fn processes() -> HashMap<u32, (u32, u64, u64)> {
    let mut procs = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(id) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(s) = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|t| stat(&t))
            {
                procs.insert(id, s);
            }
        }
    }
    procs
}

/// `root` and its descendants among `procs`, parents before their children.
fn tree(root: u32, procs: &HashMap<u32, (u32, u64, u64)>) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(id) = todo.pop() {
        if !procs.contains_key(&id) {
            continue;
        }
        out.push(id);
        todo.extend(
            procs
                .iter()
                .filter(|(_, s)| s.0 == id)
                .map(|(&child, _)| child),
        );
    }
    out
}

fn process_tree_usage(root: u32, procs: &HashMap<u32, (u32, u64, u64)>) -> Usage {
    let ticks = u64::try_from(
        nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .unwrap_or(100),
    )
    .unwrap_or(100);
    let page_kib = u64::try_from(
        nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .unwrap_or(4096),
    )
    .unwrap_or(4096)
        / 1024;
    let mut usage = Usage::default();
    for id in tree(root, procs) {
        let Some(&(_, cpu, rss)) = procs.get(&id) else {
            continue;
        };
        usage.processes += 1;
        // Nanoseconds on a CPU from schedstat (every thread); clock ticks (10 ms) otherwise.
        usage.cpu += schedstat_ns(id).map_or_else(
            || Duration::from_millis(cpu * 1000 / ticks),
            Duration::from_nanos,
        );
        usage.rss_kib += rss * page_kib;
    }
    usage
}

/// `RcvbufErrors` of the `Udp:` lines of /proc/net/snmp (a line of names, then one of values).
fn udp_rcvbuf_errors(snmp: &str) -> Option<u64> {
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (udp.next()?, udp.next()?);
    let at = names.split_whitespace().position(|n| n == "RcvbufErrors")?;
    values.split_whitespace().nth(at)?.parse().ok()
}

/// `Udp6RcvbufErrors` of /proc/net/snmp6 (a name and a value a line).
fn udp6_rcvbuf_errors(snmp6: &str) -> Option<u64> {
    snmp6.lines().find_map(|l| {
        let (name, value) = l.split_once(char::is_whitespace)?;
        (name == "Udp6RcvbufErrors").then(|| value.trim().parse().ok())?
    })
}

/// Time on a CPU of every thread of process `id`, from /proc/ID/task/*/schedstat.
fn schedstat_ns(id: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{id}/task")).ok()?;
    let mut total = 0;
    for task in tasks.flatten() {
        let text = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// A running packet capture (tcpdump writing classic pcap).
#[derive(Debug)]
pub struct Capture {
    daemon: Daemon,
    file: PathBuf,
}

impl Capture {
    pub(crate) fn start(
        netns: &str,
        interface: &str,
        filter: &str,
        file: PathBuf,
    ) -> Result<Capture, LabError> {
        let dir = file.parent().unwrap_or(Path::new("/tmp")).to_path_buf();
        let name = file.file_stem().map_or_else(
            || "capture".to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        // tcpdump rather than tshark: with --immediate-mode and -U every packet is in the file
        // as soon as it is seen, so stopping right after the last packet loses nothing
        // (tshark's dumpcap buffers, and drops what it holds when interrupted). -Z root: the
        // lab directory is root's alone.
        let mut command = Command::new("ip");
        command.args(["netns", "exec", netns, "tcpdump", "-i", interface, "-U"]);
        command.args(["--immediate-mode", "-Z", "root", "-w"]);
        command.arg(&file).arg(filter);
        let daemon = Daemon::start(&format!("{name}.tcpdump"), command, &dir)?;
        let started = wait_for(Duration::from_secs(15), Duration::from_millis(20), || {
            daemon.stderr().contains("listening on")
        });
        if started.is_none() {
            return Err(LabError::Timeout {
                what: format!("tcpdump to start capturing: {}", daemon.log()),
                seconds: 15.0,
            });
        }
        Ok(Capture { daemon, file })
    }

    /// Stops capturing and returns the file. tcpdump may not have read the last packets the
    /// kernel holds for it when the caller is done (SIGINT ends its loop without draining):
    /// first wait, up to a second, until the file has stopped growing for 100 ms.
    pub fn stop(mut self) -> Result<PathBuf, LabError> {
        let size = || std::fs::metadata(&self.file).map_or(0, |m| m.len());
        let mut last = (size(), std::time::Instant::now());
        let give_up = std::time::Instant::now() + Duration::from_secs(1);
        while std::time::Instant::now() < give_up && last.1.elapsed() < Duration::from_millis(100) {
            std::thread::sleep(Duration::from_millis(20));
            let now = size();
            if now != last.0 {
                last = (now, std::time::Instant::now());
            }
        }
        self.daemon.signal(Signal::SIGINT)?;
        self.daemon.wait(Duration::from_secs(10))?;
        Ok(self.file.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_name_with_spaces() {
        let line = "42 (my (odd) prog) S 7 42 42 0 -1 4194560 100 0 0 0 30 12 0 0 20 0 1 0 \
                    500 1000000 250 18446744073709551615";
        assert_eq!(stat(line), Some((7, 42, 250)));
        assert_eq!(stat("garbage"), None);
    }

    #[test]
    fn udp_receive_buffer_drops_of_either_family() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
                    Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n\
                    Udp: 18776 0 13810 83 13809 0\n\
                    UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\n\
                    UdpLite: 0 0 0 0 7\n";
        assert_eq!(udp_rcvbuf_errors(snmp), Some(13809));
        assert_eq!(udp_rcvbuf_errors("Udp: InDatagrams\n"), None);
        let snmp6 = "Udp6InDatagrams                 \t52\nUdp6RcvbufErrors                \t31\n\
                     UdpLite6RcvbufErrors            \t5\n";
        assert_eq!(udp6_rcvbuf_errors(snmp6), Some(31));
        assert_eq!(udp6_rcvbuf_errors("Udp6InDatagrams 52\n"), None);
    }

    #[test]
    fn the_usage_of_this_process_is_counted() {
        let usage = process_tree_usage(std::process::id(), &processes());
        assert!(usage.processes >= 1);
        assert!(usage.rss_kib > 0);
    }

    #[test]
    fn pids_are_the_process_then_what_it_forked() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Command::new("sh");
        c.args(["-c", "sleep 30 & wait"]);
        let d = Daemon::start("forks", c, dir.path()).unwrap();
        let comm = |p: u32| std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
        let mut pids = Vec::new();
        // The child is a copy of sh until it has exec'd sleep (a loaded machine once showed it
        // between the two): wait for both.
        wait_for(Duration::from_secs(5), Duration::from_millis(10), || {
            pids = d.pids();
            pids.len() == 2 && comm(pids[1]).trim() == "sleep"
        });
        assert_eq!(pids.len(), 2, "{pids:?}");
        assert_eq!(pids[0], d.pid());
        assert_eq!(comm(pids[1]).trim(), "sleep");
        for p in pids.iter().rev() {
            let _ = kill(pid(*p), Signal::SIGKILL);
        }
    }
}
