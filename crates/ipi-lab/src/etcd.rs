//! A real etcd on loopback, for the tests and benchmarks of ipam's etcd store.
//!
//! [`Etcd::start`] runs Debian's `/usr/bin/etcd` (package etcd-server) as a one-member cluster
//! listening on 127.0.0.1 only, on ports free when it starts, with a data directory of its own
//! that lives as long as the [`Etcd`]. [`Etcd::stop`] and [`Etcd::restart`] take it down and bring
//! it back on the same ports and data, as an outage would. No network namespace is needed, so
//! tests call [`available`] rather than [`crate::available`].
//!
//! [`Etcd::start_secure`] runs one as a security review would want it: clients on https only,
//! a client certificate required (`--client-cert-auth`, `--trusted-ca-file`), certificates
//! made by [`crate::pki`], and authentication on (`etcdctl auth enable`) with `root` and a user
//! [`USER`] whose role may read and write only under [`PREFIX`]. Health and metrics are then
//! served on a plaintext port of their own (`--listen-metrics-urls`).

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::pki::Pki;
use crate::{cmd, wait_for, Daemon, LabError, Output};

/// The user [`Etcd::start_secure`] makes for ipam.
pub const USER: &str = "ipam";

/// The only keys [`USER`] may read and write (ipam's default prefix, and what is under it).
pub const PREFIX: &str = "/ipi-net/ipam";

/// Where Debian's etcd-server package installs the server.
pub const ETCD: &str = "/usr/bin/etcd";

/// Where Debian's etcd-client package installs the command-line client.
pub const ETCDCTL: &str = "/usr/bin/etcdctl";

/// How long etcd gets to answer its health check after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether etcd is installed; if not, the caller is skipped or, under CI, fails
/// ([`crate::tool`]).
pub fn available() -> bool {
    crate::tool(ETCD, "etcd-server")
}

/// One etcd server on loopback. Dropping it stops the server and removes its data.
#[derive(Debug)]
pub struct Etcd {
    dir: tempfile::TempDir,
    client: SocketAddr,
    peer: SocketAddr,
    /// Where `/health` and `/metrics` answer over plain HTTP: the client port, or a port of
    /// their own for a secure server.
    metrics: SocketAddr,
    secure: Option<Secure>,
    daemon: Option<Daemon>,
    starts: usize,
}

/// What a secure server was started with.
#[derive(Debug)]
struct Secure {
    pki: Pki,
    root_password: String,
    password_file: PathBuf,
}

/// Whether every thread of process `pid` is in the stopped state (`T` in `/proc/PID/task/*/stat`).
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().all(|task| {
        std::fs::read_to_string(task.path().join("stat"))
            .ok()
            .and_then(|stat| {
                // The state follows the command name, which is in parentheses and may hold any
                // character: look after the last ')'.
                let (_, rest) = stat.rsplit_once(')')?;
                rest.split_whitespace().next().map(|state| state == "T")
            })
            .unwrap_or(false)
    })
}

/// A port on 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<SocketAddr, LabError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map_err(LabError::io("find a free port on 127.0.0.1"))
}

impl Etcd {
    /// Starts a new, empty etcd and waits until it answers.
    pub fn start() -> Result<Etcd, LabError> {
        let mut etcd = Self::new(false)?;
        etcd.launch()?;
        Ok(etcd)
    }

    /// Starts a new, empty etcd on https with client certificates required and authentication
    /// on, and waits until it answers: `root` and [`USER`] (read and write under [`PREFIX`]),
    /// whose password is in [`Etcd::password_file`].
    pub fn start_secure() -> Result<Etcd, LabError> {
        let mut etcd = Self::new(true)?;
        let dir = etcd.dir.path();
        let pki = Pki::make(&dir.join("pki"), etcd.client.ip(), USER)?;
        let password_file = dir.join("ipam.password");
        std::fs::write(&password_file, "ipam-lab-password\n")
            .map_err(LabError::io(format!("write {}", password_file.display())))?;
        etcd.secure = Some(Secure {
            pki,
            root_password: "root-lab-password".into(),
            password_file,
        });
        etcd.launch()?;
        etcd.enable_auth()?;
        Ok(etcd)
    }

    fn new(secure: bool) -> Result<Etcd, LabError> {
        let dir = tempfile::Builder::new()
            .prefix("ipi-lab-etcd.")
            .tempdir()
            .map_err(LabError::io("create the etcd directory"))?;
        let mut ports = vec![free_port()?];
        while ports.len() < if secure { 3 } else { 2 } {
            let port = free_port()?;
            if !ports.contains(&port) {
                ports.push(port);
            }
        }
        Ok(Etcd {
            dir,
            client: ports[0],
            peer: ports[1],
            metrics: ports.get(2).copied().unwrap_or(ports[0]),
            secure: None,
            daemon: None,
            starts: 0,
        })
    }

    /// Makes `root` and [`USER`] with its role on [`PREFIX`], and turns authentication on.
    fn enable_auth(&self) -> Result<(), LabError> {
        let Some(secure) = &self.secure else {
            return Ok(());
        };
        let password = std::fs::read_to_string(&secure.password_file)
            .map_err(LabError::io("read the lab's etcd password"))?;
        let user = format!("{USER}:{}", password.trim_end());
        let root = format!("root:{}", secure.root_password);
        let end = format!("{PREFIX}0");
        for args in [
            vec!["user", "add", &root],
            vec!["user", "add", &user],
            vec!["role", "add", USER],
            vec!["role", "grant-permission", USER, "readwrite", PREFIX, &end],
            vec!["user", "grant-role", USER, USER],
            vec!["auth", "enable"],
        ] {
            let mut command = self.ctl_command(false);
            cmd::check(command.args(&args))?;
        }
        Ok(())
    }

    /// The store URL ipam takes: `etcd://127.0.0.1:PORT`, or `etcd+https://127.0.0.1:PORT`
    /// for a secure server.
    pub fn url(&self) -> String {
        let scheme = if self.secure.is_some() {
            "etcd+https"
        } else {
            "etcd"
        };
        format!("{scheme}://{}", self.client)
    }

    /// The certificates of a secure server.
    pub fn pki(&self) -> Option<&Pki> {
        self.secure.as_ref().map(|s| &s.pki)
    }

    /// The file holding [`USER`]'s password (with a final newline) on a secure server.
    pub fn password_file(&self) -> Option<&Path> {
        self.secure.as_ref().map(|s| s.password_file.as_path())
    }

    /// What ipam needs to reach a secure server as [`USER`], as its environment
    /// (`IPAM_ETCD_*`): the CA, the client certificate (named for no user) and key, the user
    /// and its password file. Empty for a plaintext server.
    pub fn ipam_env(&self) -> Vec<(String, String)> {
        let Some(s) = &self.secure else {
            return Vec::new();
        };
        let mut env = Self::tls_env(s, &s.pki.client);
        env.push(("IPAM_ETCD_USER".into(), USER.to_owned()));
        env.push((
            "IPAM_ETCD_PASSWORD_FILE".into(),
            s.password_file.display().to_string(),
        ));
        env
    }

    /// What ipam needs to reach a secure server as [`USER`] by its certificate alone (whose
    /// common name is the user; no password, so etcd spends no bcrypt on it): the CA, that
    /// certificate and its key. Empty for a plaintext server.
    pub fn ipam_env_by_certificate(&self) -> Vec<(String, String)> {
        self.secure
            .as_ref()
            .map(|s| Self::tls_env(s, &s.pki.user))
            .unwrap_or_default()
    }

    fn tls_env(s: &Secure, client: &crate::pki::Pair) -> Vec<(String, String)> {
        let path = |p: &Path| p.display().to_string();
        vec![
            ("IPAM_ETCD_CACERT".into(), path(&s.pki.ca.cert)),
            ("IPAM_ETCD_CERT".into(), path(&client.cert)),
            ("IPAM_ETCD_KEY".into(), path(&client.key)),
        ]
    }

    /// The client address, `127.0.0.1:PORT`.
    pub fn endpoint(&self) -> SocketAddr {
        self.client
    }

    /// The directory holding the data and the server's logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The data directory.
    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs etcdctl (API v3) against this server, to read or write keys behind a client's back.
    pub fn ctl<I, S>(&self, args: I) -> Result<Output, LabError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = self.ctl_command(true);
        command.args(args);
        cmd::output(&mut command)
    }

    /// etcdctl for this server: on a secure one with the CA and the client certificate, and as
    /// `root` when `as_root` (once authentication is on, nothing else may write anywhere).
    fn ctl_command(&self, as_root: bool) -> Command {
        let mut command = Command::new(ETCDCTL);
        command.env("ETCDCTL_API", "3").arg("--command-timeout=5s");
        match &self.secure {
            None => command.arg(format!("--endpoints={}", self.client)),
            Some(s) => {
                command
                    .arg(format!("--endpoints=https://{}", self.client))
                    .arg(format!("--cacert={}", s.pki.ca.cert.display()))
                    .arg(format!("--cert={}", s.pki.client.cert.display()))
                    .arg(format!("--key={}", s.pki.client.key.display()));
                if as_root {
                    command.arg(format!("--user=root:{}", s.root_password));
                }
                &mut command
            }
        };
        command
    }

    /// Stops the server (SIGTERM, then SIGKILL); its data stays for [`Etcd::restart`].
    pub fn stop(&mut self) {
        if let Some(mut daemon) = self.daemon.take() {
            // A paused server would sit out SIGTERM's grace period.
            let _ = daemon.signal(Signal::SIGCONT);
            daemon.stop();
        }
    }

    /// How many requests of each gRPC method (`Txn`, `Range`, `Put`...) etcd has answered
    /// successfully since it started, from its Prometheus metrics.
    pub fn requests(&self) -> Result<std::collections::BTreeMap<String, u64>, LabError> {
        let text = get(self.metrics, "/metrics").map_err(LabError::io(format!(
            "read etcd's metrics on {}",
            self.metrics
        )))?;
        let mut out = std::collections::BTreeMap::new();
        for line in text.lines() {
            let Some(labels) = line
                .strip_prefix("grpc_server_handled_total{")
                .filter(|l| l.contains(r#"grpc_code="OK""#))
            else {
                continue;
            };
            let method = labels
                .split_once(r#"grpc_method=""#)
                .and_then(|(_, rest)| rest.split_once('"'))
                .map(|(method, _)| method);
            let count = line
                .rsplit_once(' ')
                .and_then(|(_, n)| n.parse::<f64>().ok());
            if let (Some(method), Some(count)) = (method, count) {
                // Prometheus counts are floats; these are whole numbers well below 2^53.
                *out.entry(method.to_owned()).or_default() += count as u64;
            }
        }
        Ok(out)
    }

    /// Freezes the server (SIGSTOP): connections stay open and nothing answers, as with a
    /// member that hangs. [`Etcd::resume`] thaws it.
    ///
    /// `kill` returns once the signal is queued; each thread stops when it next passes through
    /// the kernel, and on a loaded machine one may still answer a request after that. So this
    /// returns only when every thread of the server is seen stopped.
    pub fn pause(&self) -> Result<(), LabError> {
        self.signal(Signal::SIGSTOP)?;
        let pid = self.daemon.as_ref().map(Daemon::pid).unwrap_or_default();
        wait_for(START_TIMEOUT, Duration::from_millis(1), || {
            all_threads_stopped(pid)
        })
        .map(|_| ())
        .ok_or_else(|| LabError::Io {
            what: format!("stop etcd on {} (pid {pid})", self.client),
            source: std::io::Error::other("its threads still run after SIGSTOP"),
        })
    }

    /// Thaws a paused server (SIGCONT).
    pub fn resume(&self) -> Result<(), LabError> {
        self.signal(Signal::SIGCONT)
    }

    fn signal(&self, signal: Signal) -> Result<(), LabError> {
        match &self.daemon {
            Some(daemon) => daemon.signal(signal),
            None => Err(LabError::Io {
                what: format!("send {signal} to etcd on {}", self.client),
                source: std::io::Error::other("it is stopped"),
            }),
        }
    }

    /// Starts the server again on the same ports and data (stopping it first if it runs), and
    /// waits until it answers.
    pub fn restart(&mut self) -> Result<(), LabError> {
        self.stop();
        self.launch()
    }

    /// Every log of every start of the server, for a failing test's message.
    pub fn log(&self) -> String {
        (1..=self.starts)
            .map(|n| {
                let path = self.dir.path().join(format!("etcd-{n}.err"));
                format!(
                    "--- {}:\n{}",
                    path.display(),
                    std::fs::read_to_string(&path).unwrap_or_default()
                )
            })
            .collect()
    }

    fn launch(&mut self) -> Result<(), LabError> {
        self.starts += 1;
        let scheme = if self.secure.is_some() {
            "https"
        } else {
            "http"
        };
        let client = format!("{scheme}://{}", self.client);
        let peer = format!("http://{}", self.peer);
        let mut command = Command::new(ETCD);
        if let Some(s) = &self.secure {
            command
                .arg("--client-cert-auth")
                .arg(format!("--trusted-ca-file={}", s.pki.ca.cert.display()))
                .arg(format!("--cert-file={}", s.pki.server.cert.display()))
                .arg(format!("--key-file={}", s.pki.server.key.display()))
                .arg(format!("--listen-metrics-urls=http://{}", self.metrics));
        }
        command
            .arg("--name=lab")
            .arg(format!("--data-dir={}", self.data().display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=lab={peer}"))
            .arg("--initial-cluster-state=new")
            .arg("--initial-cluster-token=ipi-lab");
        let daemon = Daemon::start(&format!("etcd-{}", self.starts), command, self.dir.path())?;
        self.daemon = Some(daemon);
        let (client, metrics) = (self.client, self.metrics);
        let up = wait_for(START_TIMEOUT, Duration::from_millis(50), || {
            healthy(metrics) || !self.daemon.as_mut().is_some_and(Daemon::running)
        });
        let running = self.daemon.as_mut().is_some_and(Daemon::running);
        if up.is_none() || !running {
            let why = if running { "did not answer" } else { "exited" };
            self.stop();
            return Err(LabError::Timeout {
                what: format!(
                    "etcd on {client} to answer its health check (it {why}):\n{}",
                    self.log()
                ),
                seconds: START_TIMEOUT.as_secs_f64(),
            });
        }
        Ok(())
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether etcd at `addr` says it is healthy (`GET /health`: `{"health":"true"}`), which it
/// does once it has a leader and can serve requests.
fn healthy(addr: SocketAddr) -> bool {
    get(addr, "/health").is_ok_and(|answer| answer.contains(r#""health":"true""#))
}

/// The answer (headers and body) to `GET path` on etcd's client port.
fn get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_listening_is_not_healthy() {
        let addr = free_port().map_err(|e| e.to_string());
        assert!(addr.is_ok_and(|a| !healthy(a)));
    }
}
