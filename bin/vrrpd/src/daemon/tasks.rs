//! The tasks beside the event loop, each reporting to it through [`Inputs`]: a reader per
//! socket, a runner per track script (kept across reloads), the `vrrp_track_process` watcher,
//! the `track_file` reader, and the link and address watchers behind `track_interface`,
//! configured source addresses and interfaces that come late.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::task::JoinHandle;

use super::error::Error;
use super::inputs::Inputs;
use super::plan;
use super::scripts::{self, Identity};
use super::setup::{self, Parts};
use crate::config::{Config, VrrpScript};
use crate::net::{AddressWatcher, LinkWatcher, Netlink};

/// A track script's runner, kept across reloads while [`plan::same_run`] holds. Dropping it
/// stops the runner.
#[derive(Debug)]
struct Runner {
    script: VrrpScript,
    program: PathBuf,
    who: Option<Identity>,
    task: JoinHandle<()>,
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Every task running beside the loop.
#[derive(Debug, Default)]
pub struct Tasks {
    /// Socket readers, link and address watchers: stopped and started again together, with
    /// the sockets and interfaces they follow.
    watchers: Vec<JoinHandle<()>>,
    /// Track script runners by script.
    runners: BTreeMap<String, Runner>,
    /// The `vrrp_track_process` watcher, when an instance tracks a process.
    process_watch: Option<JoinHandle<()>>,
    /// The `track_file` reader, when an instance tracks a file.
    file_watch: Option<JoinHandle<()>>,
}

impl Tasks {
    /// Starts what `config` running as `parts` needs: each task reports its first reading at
    /// once. Runners of scripts that run as they did go on.
    pub async fn start(
        &mut self,
        config: &Config,
        parts: &Parts,
        inputs: &Inputs,
    ) -> Result<(), Error> {
        for (n, socket) in parts.sockets.iter().enumerate() {
            let (socket, inputs) = (Arc::clone(socket), inputs.clone());
            self.watchers.push(tokio::spawn(async move {
                loop {
                    let r = socket.recv().await;
                    // The socket's end is said to the loop and ends the reader.
                    let ends = matches!(&r, Err(e) if !e.is_per_datagram());
                    if !inputs.datagram(n, r) || ends {
                        return;
                    }
                }
            }));
        }
        self.start_runners(config, parts, inputs);
        self.watch_processes(config, inputs);
        self.watch_files(config, inputs);
        for name in parts.tracked_interfaces.clone() {
            let mut watcher = LinkWatcher::new_or_absent(&name).await.map_err(|source| {
                Error::TrackInterface {
                    name: name.clone(),
                    source,
                }
            })?;
            let inputs = inputs.clone();
            inputs.link(name.clone(), watcher.current().up);
            self.watchers.push(tokio::spawn(async move {
                while let Ok(state) = watcher.changed().await {
                    if !inputs.link(name.clone(), state.up && state.present) {
                        return;
                    }
                }
            }));
        }
        self.watch_sources(config, inputs);
        self.watch_unfinished(parts, inputs);
        Ok(())
    }

    /// Stops the socket readers and the link and address watchers (the sockets or interfaces
    /// they follow are about to change); the rest goes on.
    pub fn stop_watchers(&mut self) {
        for t in self.watchers.drain(..) {
            t.abort();
        }
    }

    /// Stops everything.
    pub fn stop(&mut self) {
        self.stop_watchers();
        self.runners.clear();
        restart(&mut self.process_watch, None::<std::future::Ready<()>>);
        restart(&mut self.file_watch, None::<std::future::Ready<()>>);
    }

    /// Runs every track script an instance tracks. A runner already running for a script that
    /// runs the same way ([`plan::same_run`], the same program and user) goes on, so that a
    /// reload neither runs it early nor loses its rhythm; the others stop.
    fn start_runners(&mut self, config: &Config, parts: &Parts, inputs: &Inputs) {
        let mut old = std::mem::take(&mut self.runners);
        for s in &config.scripts {
            let Some((program, who)) = parts.scripts.get(&s.name).cloned() else {
                continue;
            };
            let used =
                (config.instances.iter()).any(|i| i.track_scripts.iter().any(|t| t.name == s.name));
            if !used {
                continue;
            }
            if let Some(mut r) = old.remove(&s.name) {
                if r.program == program && r.who == who && plan::same_run(&r.script, s) {
                    r.script = s.clone();
                    self.runners.insert(s.name.clone(), r);
                    continue;
                }
            }
            let task = scripts::track(program.clone(), s.clone(), who, inputs.clone());
            let runner = Runner {
                script: s.clone(),
                program,
                who,
                task: tokio::spawn(task),
            };
            self.runners.insert(s.name.clone(), runner);
        }
    }

    /// (Re)starts the `vrrp_track_process` watcher for the processes instances track: it
    /// reports each one's state at once, which a kept instance already has (no change).
    fn watch_processes(&mut self, config: &Config, inputs: &Inputs) {
        let tracked = config.tracked(&config.processes, |i| &i.track_processes);
        let task = (!tracked.is_empty()).then(|| super::processes::watch(tracked, inputs.clone()));
        restart(&mut self.process_watch, task);
    }

    /// (Re)starts the `track_file` reader for the files instances track, after writing their
    /// `init_file` values; it reports each file's value at once.
    fn watch_files(&mut self, config: &Config, inputs: &Inputs) {
        let tracked = config.tracked(&config.files, |i| &i.track_files);
        for f in &tracked {
            super::track_files::init(f);
        }
        let task =
            (!tracked.is_empty()).then(|| super::track_files::watch(tracked, inputs.clone()));
        restart(&mut self.file_watch, task);
    }

    /// Every configured source address (`unicast_src_ip`, `mcast_src_ip`) is followed: while
    /// it is not on its instance's interface (a bridge such as br-ex took it, or it is gone),
    /// the instance is FAULT ([`setup::source_track`]), so that it never advertises from an
    /// address the interface lost; the other routers take over.
    fn watch_sources(&mut self, config: &Config, inputs: &Inputs) {
        let sources = setup::sources(config);
        if sources.is_empty() {
            return;
        }
        let watch = AddressWatcher::new().and_then(|w| Ok((w, Netlink::connect()?)));
        match watch {
            Ok((watcher, netlink)) => {
                let task = follow_sources(watcher, netlink, sources, inputs.clone());
                self.watchers.push(tokio::spawn(task));
            }
            Err(e) => tracing::error!("source addresses cannot be followed: {e}"),
        }
    }

    /// Address changes retry what an interface's link events could not finish: a waiting
    /// instance, or one whose interface was created again, whose interface has no address yet
    /// (the link came up first, DHCP later). For each such interface, its link state now is
    /// sent as a link event, which the loop takes as it takes any other.
    fn watch_unfinished(&mut self, parts: &Parts, inputs: &Inputs) {
        let mut known: BTreeMap<String, Option<u32>> = (parts.vrs.iter())
            .flat_map(|v| std::iter::once(&v.interface).chain(v.vips.iter().map(|(i, _)| i)))
            .map(|i| (i.name.clone(), Some(i.index)))
            .collect();
        for w in &parts.waiting {
            known.insert(w.interface.clone(), None);
        }
        let watch = AddressWatcher::new().and_then(|w| Ok((w, Netlink::connect()?)));
        let (mut watcher, netlink) = match watch {
            Ok(w) => w,
            Err(e) => {
                tracing::error!("address changes cannot be followed: {e}");
                return;
            }
        };
        // Our own VIPs coming and going tell nothing about an interface's readiness.
        let vips: BTreeSet<IpAddr> = (parts.vrs.iter())
            .flat_map(|v| v.vips.iter().map(|(_, vip)| vip.address))
            .collect();
        let inputs = inputs.clone();
        self.watchers.push(tokio::spawn(async move {
            while let Ok(changed) = watcher.changed().await {
                if changed.iter().all(|c| c.is_some_and(|c| vips.contains(&c))) {
                    continue;
                }
                for (name, index) in &known {
                    let Ok(now) = netlink.interface(name).await else {
                        continue;
                    };
                    if Some(now.index) != *index
                        && !inputs.link(name.clone(), now.admin_up && now.running)
                    {
                        return;
                    }
                }
            }
        }));
    }
}

/// Reports as a link event, under its track name, whether each source address is on its
/// interface: once at start, then after every address change.
async fn follow_sources(
    mut watcher: AddressWatcher,
    netlink: Netlink,
    sources: BTreeSet<(String, String, IpAddr)>,
    inputs: Inputs,
) {
    let mut last: BTreeMap<String, bool> = BTreeMap::new();
    let mut changed = vec![None];
    loop {
        // Only a change of a source address (or one that could not be read) is looked into:
        // the VIPs coming and going are not.
        let ours = |c: &Option<IpAddr>| c.is_none_or(|c| sources.iter().any(|s| s.2 == c));
        if changed.iter().any(ours)
            && !look_at_sources(&netlink, &sources, &mut last, &inputs).await
        {
            return;
        }
        match watcher.changed().await {
            Ok(c) => changed = c,
            Err(_) => return,
        }
    }
}

/// Sends each source whose presence on its interface changed since `last`; false once nobody
/// listens.
async fn look_at_sources(
    netlink: &Netlink,
    sources: &BTreeSet<(String, String, IpAddr)>,
    last: &mut BTreeMap<String, bool>,
    inputs: &Inputs,
) -> bool {
    for (track, interface, address) in sources {
        let on = match netlink.interface(interface).await {
            Ok(i) => netlink
                .addresses(&i)
                .await
                .is_ok_and(|all| all.iter().any(|a| a.address == *address)),
            Err(_) => false,
        };
        if last.get(track) == Some(&on) {
            continue;
        }
        if on {
            tracing::info!("{track}: the address is there");
        } else {
            tracing::error!(
                "{track}: the address is no longer on {interface}: FAULT, no advert from it \
                 until it is back"
            );
        }
        last.insert(track.clone(), on);
        if !inputs.link(track.clone(), on) {
            return false;
        }
    }
    true
}

/// Puts `task` (if any) in `slot`, stopping the one there.
fn restart<F>(slot: &mut Option<JoinHandle<()>>, task: Option<F>)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    if let Some(old) = slot.take() {
        old.abort();
    }
    *slot = task.map(tokio::spawn);
}
