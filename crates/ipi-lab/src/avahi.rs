//! The real avahi-daemon on a lab host, for interop tests and benchmarks.
//!
//! avahi needs a system D-Bus, and only one avahi-daemon runs per mount namespace (its pid file
//! and socket live in /run): each one here gets a [`MountNamespace`] of its own with fresh
//! tmpfs mounts on /run/dbus and /run/avahi-daemon, its own system bus, and a config naming the
//! host. [`Avahi::run`] runs a client (avahi-browse, avahi-resolve, avahi-publish) inside the
//! same namespaces.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;

use crate::mounts::{Mount, MountNamespace};
use crate::{Daemon, Host, LabError, Output};

/// One avahi-daemon.
#[derive(Debug)]
pub struct Avahi {
    daemon: Daemon,
    namespace: MountNamespace,
}

impl Avahi {
    /// Whether avahi-daemon or the avahi-utils clients are not installed (a benchmark then says
    /// so rather than measuring a stack that never started).
    pub fn missing() -> bool {
        [
            "/usr/sbin/avahi-daemon",
            "/usr/bin/avahi-publish",
            "/usr/bin/avahi-browse",
        ]
        .iter()
        .any(|p| !std::path::Path::new(p).exists())
    }

    /// Starts avahi-daemon on `host`, publishing the host name `hostname` on eth0, and waits
    /// until its D-Bus API answers.
    pub fn start(host: &Host, hostname: &str) -> Result<Avahi, LabError> {
        let avahi = Avahi::launch(host, hostname)?;
        let up = crate::wait_for(Duration::from_secs(10), Duration::from_millis(100), || {
            avahi
                .run("avahi-resolve", ["-n", &format!("{hostname}.local")])
                .is_ok_and(|o| o.success)
        });
        if up.is_none() {
            return Err(LabError::Timeout {
                what: format!(
                    "avahi-daemon on {} to answer:\n{}",
                    host.name(),
                    avahi.daemon.log()
                ),
                seconds: 10.0,
            });
        }
        Ok(avahi)
    }

    /// Starts avahi-daemon as [`Avahi::start`] does, without waiting for it (for many hosts
    /// started at once; clients started meanwhile have to retry until its D-Bus answers).
    pub fn launch(host: &Host, hostname: &str) -> Result<Avahi, LabError> {
        let conf = host.dir().join(format!("avahi-{hostname}.conf"));
        std::fs::write(
            &conf,
            format!(
                "[server]\nhost-name={hostname}\ndomain-name=local\nuse-ipv4=yes\nuse-ipv6=yes\n\
                 allow-interfaces=eth0\nenable-dbus=yes\nratelimit-interval-usec=1000000\n\
                 ratelimit-burst=1000\n[wide-area]\nenable-wide-area=no\n[publish]\n\
                 publish-addresses=yes\npublish-hinfo=no\npublish-workstation=no\n\
                 publish-aaaa-on-ipv4=yes\npublish-a-on-ipv6=no\n[reflector]\n[rlimits]\n"
            ),
        )
        .map_err(LabError::io("write the avahi config"))?;
        let namespace = MountNamespace::new(
            host,
            &format!("avahi-{hostname}.mounts"),
            &[
                Mount::Tmpfs(PathBuf::from("/run/dbus")),
                Mount::Tmpfs(PathBuf::from("/run/avahi-daemon")),
            ],
        )?;
        let script = format!(
            "set -e; dbus-daemon --system --fork; \
             exec avahi-daemon --no-drop-root --no-chroot --no-rlimits -f {}",
            conf.display()
        );
        let daemon = namespace.spawn(&format!("avahi-{hostname}"), "sh", ["-c", &script])?;
        Ok(Avahi { daemon, namespace })
    }

    /// Runs `program` in avahi's network and mount namespaces (so that it reaches this
    /// avahi-daemon's D-Bus).
    pub fn run<I, S>(&self, program: &str, args: I) -> Result<Output, LabError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.namespace.run(program, args)
    }

    /// Starts `program` as a daemon in avahi's namespaces (avahi-publish, which publishes for
    /// as long as it runs); its output goes to the avahi host's directory.
    pub fn spawn<I, S>(&self, name: &str, program: &str, args: I) -> Result<Daemon, LabError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.namespace.spawn(name, program, args)
    }

    /// The daemon (its log, its usage).
    pub fn daemon(&self) -> &Daemon {
        &self.daemon
    }
}
