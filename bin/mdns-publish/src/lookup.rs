//! `mdns-publish browse`: rounds of one-shot queries and the inventory they give.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use hickory_proto::op::Message;
use tokio::net::UdpSocket;
use tokio::time::Instant;

use crate::browse::{Found, Seen, ETCD_TYPE};
use crate::net::{self, Interface};
use crate::records::name;

/// What to browse for.
#[derive(Debug, Clone)]
pub struct Browse {
    /// The nodes' service type.
    pub kind: String,
    /// Instance names must contain this.
    pub filter: String,
    /// etcd targets are withheld below this many.
    pub min_srv: usize,
    /// How long one round listens.
    pub round: Duration,
    /// The address whose interface is used.
    pub bind: Option<IpAddr>,
}

/// When, within a round, the open questions are asked (again); then every second until the
/// round ends.
const ASK_AT: [Duration; 4] = [
    Duration::ZERO,
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
];

/// One round: ask, listen, and say what was found.
pub async fn round(b: &Browse) -> Result<Found, String> {
    let iface: Option<Interface> = match b.bind {
        Some(a) => Some(net::interface(a, None)?),
        None => None,
    };
    let v4 = net::query_socket(iface.as_ref(), false)?;
    let v6 = match &iface {
        Some(i) if i.addresses.iter().any(IpAddr::is_ipv6) => {
            Some((net::query_socket(Some(i), true)?, i.index))
        }
        _ => None,
    };
    let kind = name(&format!("{}.local.", b.kind))?;
    let kinds = [kind.clone(), name(&format!("{ETCD_TYPE}.local."))?];
    let mut seen = Seen::default();
    let start = Instant::now();
    let end = start + b.round;
    let mut asks = ASK_AT
        .iter()
        .map(|d| start + *d)
        .filter(|t| *t < end)
        .peekable();
    let (mut buf, mut buf6) = (vec![0u8; 9000], vec![0u8; 9000]);
    loop {
        let next_ask = asks.peek().copied();
        let wake = next_ask.unwrap_or(end).min(end);
        tokio::select! {
            r = v4.recv_from(&mut buf) => {
                if let Ok((n, _)) = r {
                    take(&mut seen, &buf[..n]);
                }
            }
            r = recv6(&v6, &mut buf6) => {
                if let Ok((n, _)) = r {
                    take(&mut seen, &buf6[..n]);
                }
            }
            () = tokio::time::sleep_until(wake) => {
                if Instant::now() >= end {
                    break;
                }
                asks.next();
                let query = seen.query(&kinds);
                let whole = query.to_vec().map_err(|e| e.to_string())?;
                // Hundreds of open questions do not fit one datagram: spread them.
                for q in crate::responder::packets(&query, &whole) {
                    let _ = v4.send_to(&q, net::group(false, 0)).await;
                    if let Some((s, index)) = &v6 {
                        let _ = s.send_to(&q, net::group(true, *index)).await;
                    }
                }
            }
        }
    }
    seen.found(&kind, &b.filter, b.min_srv)
}

async fn recv6(
    s: &Option<(UdpSocket, u32)>,
    buf: &mut [u8],
) -> std::io::Result<(usize, std::net::SocketAddr)> {
    match s {
        Some((s, _)) => s.recv_from(buf).await,
        None => std::future::pending().await,
    }
}

fn take(seen: &mut Seen, bytes: &[u8]) {
    if let Ok(m) = Message::from_vec(bytes) {
        seen.receive(&m);
    }
}

/// The inventory as text, or as JSON with the etcd targets.
pub fn render(found: &Found, json: bool) -> String {
    if !json {
        return found.inventory.to_text();
    }
    let mut v: serde_json::Value =
        serde_json::from_str(&found.inventory.to_json()).unwrap_or_default();
    v["etcd"] = serde_json::json!(found.etcd);
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

/// Writes `text` to `path` atomically; true when the file changed.
pub fn write(path: &Path, text: &str) -> Result<bool, String> {
    ipi_core::atomic::write(path, text.as_bytes())
        .map(|o| o == ipi_core::atomic::Outcome::Changed)
        .map_err(|e| format!("{}: {e}", path.display()))
}
