//! `mdns-publish run`: the responder on the wire, until SIGTERM (goodbyes) or a lost name.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_proto::op::Message;
use tokio::net::UdpSocket;
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;

use crate::cli::OnConflict;
use crate::net::{self, Interface};
use crate::records::Publication;
use crate::responder::{Outgoing, Responder, To};

/// How long address changes may take to settle before the interface is read again.
const SETTLE: Duration = Duration::from_millis(200);
/// How long `--on-conflict wait` waits before probing again.
const CONFLICT_WAIT: Duration = Duration::from_secs(10);

/// Publishes what `publication` says for the interface holding `bind`, with the interface's
/// addresses, until a signal (Ok) or a conflict under [`OnConflict::Exit`] (Err).
pub fn run(
    bind: IpAddr,
    publication: impl Fn(&[IpAddr]) -> Result<Publication, String>,
    on_conflict: OnConflict,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(serve(bind, publication, on_conflict))
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
            To::Multicast => [(false, &self.v4), (true, &self.v6)]
                .into_iter()
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

async fn recv(socket: &Option<UdpSocket>, buf: &mut [u8]) -> std::io::Result<(usize, SocketAddr)> {
    match socket {
        Some(s) => s.recv_from(buf).await,
        None => std::future::pending().await,
    }
}

async fn serve(
    bind: IpAddr,
    publication: impl Fn(&[IpAddr]) -> Result<Publication, String>,
    on_conflict: OnConflict,
) -> Result<(), String> {
    let mut iface: Interface = net::interface(bind, None)?;
    let (v4, v6) = net::mdns_sockets(&iface)?;
    let wire = Wire {
        v4,
        v6,
        index: iface.index,
    };
    let records = publication(&iface.addresses)?.records()?;
    let seed = u64::from(std::process::id())
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
    let mut responder = Responder::new(records, Instant::now().into_std(), seed);
    tracing::info!("publishing on {} ({:?})", iface.name, iface.addresses);
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let watch = net::link_watch()?;
    let (mut b4, mut b6) = (vec![0u8; 9000], vec![0u8; 9000]);
    let mut ready = false;
    loop {
        let wake = responder.next_timeout().map_or_else(
            || Instant::now() + Duration::from_secs(3600),
            Instant::from_std,
        );
        let datagram = tokio::select! {
            r = recv(&wire.v4, &mut b4) => r.ok().map(|(n, from)| (b4[..n].to_vec(), from)),
            r = recv(&wire.v6, &mut b6) => r.ok().map(|(n, from)| (b6[..n].to_vec(), from)),
            () = tokio::time::sleep_until(wake) => None,
            () = net::link_changed(&watch) => {
                tokio::time::sleep(SETTLE).await;
                if let Ok(n) = net::interface(bind, Some(&iface.name)) {
                    if n.up && !n.addresses.is_empty() && (n.addresses != iface.addresses || !iface.up) {
                        tracing::warn!("{}: addresses {:?}: probing and announcing again", n.name, n.addresses);
                        let records = publication(&n.addresses)?.records()?;
                        for o in responder.replace(records, Instant::now().into_std()) {
                            wire.send(&o).await;
                        }
                    } else if !n.up && iface.up {
                        tracing::warn!("{}: link down", n.name);
                    }
                    iface = n;
                }
                None
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
        };
        let now = Instant::now().into_std();
        let mut out = Vec::new();
        if let Some((bytes, from)) = datagram {
            match Message::from_vec(&bytes) {
                Ok(m) => out.extend(responder.receive(&m, from, now)),
                Err(e) => tracing::debug!("{from}: not a DNS message: {e}"),
            }
        }
        out.extend(responder.poll(now));
        for o in &out {
            wire.send(o).await;
        }
        if let Some(why) = responder.conflict() {
            let why = why.to_string();
            match on_conflict {
                OnConflict::Exit => {
                    tracing::error!("name conflict: {why}: not renaming, exiting");
                    return Err(format!("name conflict: {why}"));
                }
                OnConflict::Wait => {
                    tracing::error!("name conflict: {why}: probing again in {CONFLICT_WAIT:?}");
                    tokio::time::sleep(CONFLICT_WAIT).await;
                    responder.retry(Instant::now().into_std());
                }
            }
        }
        if responder.established() && !ready {
            ready = true;
            tracing::info!("published {} records", responder.records().len());
            ipi_core::service::notify_systemd("READY=1");
        }
    }
    ipi_core::service::notify_systemd("STOPPING=1");
    wire.send(&responder.goodbye()).await;
    tracing::info!("goodbye sent");
    Ok(())
}
