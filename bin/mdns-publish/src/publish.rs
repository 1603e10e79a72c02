//! `mdns-publish run`: the responder on the wire, until SIGTERM (goodbyes) or a lost name.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_proto::op::Message;
use tokio::net::UdpSocket;
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;

use crate::config::{ConfigError, Source};
use crate::key::{ClusterKey, RESIGN};
use crate::link::{Arrival, Link};
use crate::net::{self, Interface, NetError};
use crate::records::{NameError, Owned};
use crate::responder::{Outgoing, Responder, To};

/// How long address changes may take to settle before the interface is read again.
const SETTLE: Duration = Duration::from_millis(200);
/// How long [`OnConflict::Wait`] waits before probing again.
const CONFLICT_WAIT: Duration = Duration::from_secs(10);

/// What to do when another host owns one of our names (never a silent rename).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnConflict {
    /// Stop publishing: [`run`] ends with [`PublishError::Conflict`].
    Exit,
    /// Wait [`CONFLICT_WAIT`] and probe again, until the name is free.
    Wait,
}

/// Why publishing stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The runtime could not be built.
    #[error("{0}")]
    Runtime(std::io::Error),
    /// The interface or a socket.
    #[error(transparent)]
    Net(#[from] NetError),
    /// The publication for the interface's addresses.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A name in the publication that cannot go on the wire.
    #[error(transparent)]
    Name(#[from] NameError),
    /// The signal handlers could not be installed.
    #[error("{0}")]
    Signal(std::io::Error),
    /// Another host owns one of our names (under [`OnConflict::Exit`]).
    #[error("name conflict: {0}")]
    Conflict(String),
}

/// Publishes what `source` says for the interface holding `bind`, with the interface's
/// addresses, until a signal (Ok) or a conflict under [`OnConflict::Exit`] (Err).
pub fn run(
    bind: IpAddr,
    source: &Source,
    on_conflict: OnConflict,
    key: Option<ClusterKey>,
) -> Result<(), PublishError> {
    let runtime = ipi_core::service::runtime().map_err(PublishError::Runtime)?;
    let what = What { source, key };
    runtime.block_on(serve(bind, &what, on_conflict))
}

/// What is published: the source's records, signed with the cluster key when there is one.
struct What<'a> {
    source: &'a Source,
    key: Option<ClusterKey>,
}

impl What<'_> {
    /// The records for the interface's `addresses`, signed now.
    fn records(&self, addresses: &[IpAddr]) -> Result<Vec<Owned>, PublishError> {
        let mut p = self.source.publication(addresses)?;
        if let Some(k) = &self.key {
            k.sign(&mut p, std::time::SystemTime::now());
        }
        Ok(p.records()?)
    }
}

struct Wire {
    v4: Option<UdpSocket>,
    v6: Option<UdpSocket>,
    index: u32,
}

impl Wire {
    async fn send(&self, out: &Outgoing) {
        let bytes = match out.message.to_vec() {
            Ok(b) => b,
            Err(e) => return tracing::error!("cannot encode a message: {e}"),
        };
        let targets: Vec<(SocketAddr, &UdpSocket)> = match &out.to {
            To::Multicast | To::Group { .. } => [(false, &self.v4), (true, &self.v6)]
                .into_iter()
                .filter(|(v6, _)| out.to == To::Multicast || out.to == To::Group { v6: *v6 })
                .filter_map(|(v6, s)| Some((net::group(v6, self.index), s.as_ref()?)))
                .collect(),
            To::Unicast(a) => {
                let s = if a.is_ipv4() { &self.v4 } else { &self.v6 };
                s.iter().map(|s| (*a, s)).collect()
            }
        };
        let packets = crate::responder::packets(&out.message, &bytes);
        for (to, socket) in targets {
            for packet in &packets {
                if let Err(e) = socket.send_to(packet, to).await {
                    tracing::debug!("send to {to}: {e}");
                }
            }
        }
    }
}

/// A seed for the responder's random delays that differs between nodes and runs.
pub(crate) fn seed() -> u64 {
    u64::from(std::process::id())
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
}

async fn serve(bind: IpAddr, what: &What<'_>, on_conflict: OnConflict) -> Result<(), PublishError> {
    let mut iface: Interface = net::interface(bind, None)?;
    let (v4, v6) = net::mdns_sockets(&iface)?;
    let wire = Wire {
        v4,
        v6,
        index: iface.index,
    };
    let records = what.records(&iface.addresses)?;
    let mut responder = Responder::new(records, Instant::now().into_std(), seed());
    tracing::info!("publishing on {} ({:?})", iface.name, iface.addresses);
    let mut term = signal(SignalKind::terminate()).map_err(PublishError::Signal)?;
    let mut int = signal(SignalKind::interrupt()).map_err(PublishError::Signal)?;
    let watch = net::link_watch()?;
    let (mut b4, mut b6) = (vec![0u8; 9000], vec![0u8; 9000]);
    let mut ready = false;
    let mut was_established = false;
    // With a key, signed again before the signature's time leaves the browsers' window.
    let mut resign = tokio::time::interval_at(Instant::now() + RESIGN, RESIGN);
    loop {
        let wake = responder.next_timeout().map_or_else(
            || Instant::now() + Duration::from_secs(3600),
            Instant::from_std,
        );
        let datagram = tokio::select! {
            r = net::recv_on(wire.v4.as_ref(), &mut b4) => r.ok().map(|(n, a)| (b4[..n].to_vec(), a)),
            r = net::recv_on(wire.v6.as_ref(), &mut b6) => r.ok().map(|(n, a)| (b6[..n].to_vec(), a)),
            () = tokio::time::sleep_until(wake) => None,
            () = net::link_changed(&watch) => {
                iface = relink(bind, iface, what, &mut responder, &wire).await?;
                None
            }
            _ = resign.tick(), if what.key.is_some() => {
                for o in responder.replace(what.records(&iface.addresses)?, Instant::now().into_std()) {
                    wire.send(&o).await;
                }
                None
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
        };
        step(&mut responder, &wire, &iface.link, datagram).await;
        if let Some(why) = responder.conflict() {
            let why = why.to_string();
            conflict(&mut responder, why, on_conflict).await?;
        }
        let established = responder.established();
        if established && !ready {
            ready = true;
            tracing::info!("published {} records", responder.records().len());
            ipi_core::service::notify_systemd("READY=1");
        } else if established && !was_established {
            tracing::info!("probed and announced again: the names are still ours");
        }
        was_established = established;
    }
    ipi_core::service::notify_systemd("STOPPING=1");
    wire.send(&responder.goodbye()).await;
    tracing::info!("goodbye sent");
    Ok(())
}

/// The interface after a link or address change: once it is up with new addresses, they are
/// probed and announced again. Unchanged when it cannot be read.
async fn relink(
    bind: IpAddr,
    iface: Interface,
    what: &What<'_>,
    responder: &mut Responder,
    wire: &Wire,
) -> Result<Interface, PublishError> {
    tokio::time::sleep(SETTLE).await;
    let Ok(n) = net::interface(bind, Some(&iface.name)) else {
        return Ok(iface);
    };
    if n.up && !n.addresses.is_empty() && (n.addresses != iface.addresses || !iface.up) {
        tracing::warn!(
            "{}: addresses {:?}: probing and announcing again",
            n.name,
            n.addresses
        );
        let records = what.records(&n.addresses)?;
        for o in responder.replace(records, Instant::now().into_std()) {
            wire.send(&o).await;
        }
    } else if !n.up && iface.up {
        tracing::warn!("{}: link down", n.name);
    }
    Ok(n)
}

/// Takes in a datagram, if one came and the link allows it, and sends whatever the responder
/// has to say now.
async fn step(
    responder: &mut Responder,
    wire: &Wire,
    link: &Link,
    datagram: Option<(Vec<u8>, Arrival)>,
) {
    let now = Instant::now().into_std();
    let mut out = Vec::new();
    if let Some((bytes, arrival)) = datagram {
        let from = arrival.from;
        match Message::from_vec(&bytes) {
            Ok(m) => match link.admit(&m, &arrival) {
                Ok(()) => out.extend(responder.receive(&m, &arrival, now)),
                Err(why) => tracing::debug!("{from}: refused: {why}"),
            },
            Err(e) => tracing::debug!("{from}: not a DNS message: {e}"),
        }
    }
    out.extend(responder.poll(now));
    for o in &out {
        wire.send(o).await;
    }
}

/// A name another host owns: the end under [`OnConflict::Exit`]; a wait and a new probe
/// under [`OnConflict::Wait`].
async fn conflict(
    responder: &mut Responder,
    why: String,
    on_conflict: OnConflict,
) -> Result<(), PublishError> {
    match on_conflict {
        OnConflict::Exit => {
            tracing::error!("name conflict: {why}: not renaming, exiting");
            Err(PublishError::Conflict(why))
        }
        OnConflict::Wait => {
            tracing::error!("name conflict: {why}: probing again in {CONFLICT_WAIT:?}");
            tokio::time::sleep(CONFLICT_WAIT).await;
            responder.retry(Instant::now().into_std());
            Ok(())
        }
    }
}
