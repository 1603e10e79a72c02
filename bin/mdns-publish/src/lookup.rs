//! `mdns-publish browse`: rounds of one-shot queries and the inventory they give, once or
//! round after round.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hickory_proto::op::Message;
use hickory_proto::ProtoError;
use tokio::net::UdpSocket;
use tokio::time::Instant;

use crate::browse::{Found, FoundError, Refusals, Seen, ETCD_TYPE, MAX_RECORDS};
use crate::key::ClusterKey;
use crate::link::{Arrival, Link};
use crate::net::{self, Interface, NetError};
use crate::records::{name, NameError};
use crate::tally::{Round, Tally};

/// A browse that failed.
#[derive(Debug, thiserror::Error)]
pub enum BrowseError {
    /// The interface or a socket.
    #[error(transparent)]
    Net(#[from] NetError),
    /// A service type that is not a DNS name.
    #[error(transparent)]
    Name(#[from] NameError),
    /// What was found does not make an inventory.
    #[error(transparent)]
    Found(#[from] FoundError),
    /// The query could not be encoded.
    #[error("{0}")]
    Encode(ProtoError),
    /// The inventory could not be written.
    #[error("{}: {source}", .source.path.display())]
    Write {
        /// Why.
        source: ipi_core::atomic::WriteError,
    },
}

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
    /// Nodes must be signed with it, when given.
    pub key: Option<ClusterKey>,
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
pub async fn round(b: &Browse) -> Result<Found, BrowseError> {
    found(b, &listen(b).await?.seen)
}

/// What `seen` says of the nodes `b` browses for.
fn found(b: &Browse, seen: &Seen) -> Result<Found, BrowseError> {
    let kind = name(&format!("{}.local.", b.kind))?;
    let now = std::time::SystemTime::now();
    Ok(seen.found(&kind, &b.filter, b.min_srv, b.key.as_ref(), now)?)
}

/// The responses a round takes in at most (a flood beyond it waits for the next round).
const MAX_RESPONSES: usize = 8192;

/// What one round heard.
#[derive(Debug, Default)]
struct Heard {
    /// The round's own view: what it asks about next.
    seen: Seen,
    /// The responses taken in, in order, with their source and when: what `--watch` carries
    /// into what earlier rounds heard, by the same rules.
    responses: Vec<(Message, IpAddr, std::time::Instant)>,
    /// Datagrams the link did not allow (off the link, TTL below 255, not from port 5353).
    off_link: u64,
    /// Responses past [`MAX_RESPONSES`] in the round, not taken in.
    overflow: u64,
}

impl Heard {
    fn take(&mut self, link: &Link, bytes: &[u8], arrival: &Arrival) {
        let Ok(m) = Message::from_vec(bytes) else {
            return;
        };
        if let Err(why) = link.response(arrival) {
            self.off_link += 1;
            return tracing::debug!("{}: refused: {why}", arrival.from);
        }
        if self.responses.len() >= MAX_RESPONSES {
            self.overflow += 1;
            return;
        }
        let now = std::time::Instant::now();
        self.seen.receive_at(&m, arrival.from.ip(), now);
        self.responses.push((m, arrival.from.ip(), now));
    }
}

/// One round's asking and listening: what was heard.
async fn listen(b: &Browse) -> Result<Heard, BrowseError> {
    let iface: Option<Interface> = match b.bind {
        Some(a) => Some(net::interface(a, None)?),
        None => None,
    };
    let link = match &iface {
        Some(i) => i.link.clone(),
        None => net::every_link()?,
    };
    let v4 = net::query_socket(iface.as_ref(), false)?;
    let v6 = match &iface {
        Some(i) if i.addresses.iter().any(IpAddr::is_ipv6) => {
            Some((net::query_socket(Some(i), true)?, i.index))
        }
        _ => None,
    };
    let kinds = [
        name(&format!("{}.local.", b.kind))?,
        name(&format!("{ETCD_TYPE}.local."))?,
    ];
    let mut heard = Heard::default();
    let start = Instant::now();
    let end = start + b.round;
    let every_second = (2..).map(Duration::from_secs);
    let mut asks = ASK_AT
        .iter()
        .copied()
        .chain(every_second)
        .map(|d| start + d)
        .take_while(|t| *t < end)
        .peekable();
    let (mut buf, mut buf6) = (vec![0u8; 9000], vec![0u8; 9000]);
    loop {
        let next_ask = asks.peek().copied();
        let wake = next_ask.unwrap_or(end).min(end);
        tokio::select! {
            r = net::recv(&v4, &mut buf) => {
                if let Ok((n, arrival)) = r {
                    heard.take(&link, &buf[..n], &arrival);
                }
            }
            r = recv6(&v6, &mut buf6) => {
                if let Ok((n, arrival)) = r {
                    heard.take(&link, &buf6[..n], &arrival);
                }
            }
            () = tokio::time::sleep_until(wake) => {
                if Instant::now() >= end {
                    break;
                }
                asks.next();
                for q in small_queries(&heard.seen.query(&kinds))? {
                    let _ = v4.send_to(&q, net::group(false, 0)).await;
                    if let Some((s, index)) = &v6 {
                        let _ = s.send_to(&q, net::group(true, *index)).await;
                    }
                }
            }
        }
    }
    Ok(heard)
}

/// Questions a query datagram carries. A one-shot query comes from a port other than 5353, so
/// responders answer it as legacy unicast, which repeats the query's questions in every
/// datagram of the answer (RFC 6762 6.7): forty questions a query filled each answer datagram
/// with questions and left room for one record, a flood that a browser of 200 instances could
/// not read within its round. A few questions a query leave the room to the answers.
const QUESTIONS_PER_QUERY: usize = 8;

/// The open questions as query datagrams of at most [`QUESTIONS_PER_QUERY`] questions each.
fn small_queries(all: &Message) -> Result<Vec<Vec<u8>>, BrowseError> {
    all.queries()
        .chunks(QUESTIONS_PER_QUERY)
        .map(|chunk| {
            let mut m = Message::new();
            m.set_id(all.id())
                .set_message_type(all.message_type())
                .set_op_code(all.op_code());
            for q in chunk {
                m.add_query(q.clone());
            }
            m.to_vec().map_err(BrowseError::Encode)
        })
        .collect()
}

async fn recv6(s: &Option<(UdpSocket, u32)>, buf: &mut [u8]) -> std::io::Result<(usize, Arrival)> {
    match s {
        Some((s, _)) => net::recv(s, buf).await,
        None => std::future::pending().await,
    }
}

/// Says in the log what a round left out: nodes that cannot be in the inventory, datagrams
/// from off the link, records from a source that does not own their name, records past the
/// cap.
fn report(found: &Found, off_link: u64, refused: Refusals) {
    for d in &found.dropped {
        tracing::warn!("left out of the inventory: {d}");
    }
    if off_link > 0 {
        tracing::warn!(
            "{off_link} response(s) refused: not from the link (source, IP TTL 255, port 5353)"
        );
    }
    if refused.not_owner > 0 {
        tracing::warn!(
            "{} record(s) refused: a name told by another source first",
            refused.not_owner
        );
    }
    if refused.full > 0 {
        tracing::warn!("{} record(s) refused: {MAX_RECORDS} held", refused.full);
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
pub fn write(path: &Path, text: &str) -> Result<bool, BrowseError> {
    ipi_core::atomic::write(path, text.as_bytes())
        .map(|o| o == ipi_core::atomic::Outcome::Changed)
        .map_err(|source| BrowseError::Write { source })
}

/// Where and how often the inventory is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// JSON (with the etcd targets) rather than text.
    pub json: bool,
    /// The file, written atomically; standard output when none.
    pub file: Option<PathBuf>,
    /// Round after round, rewriting only when the inventory changes.
    pub watch: bool,
    /// What the rounds refused, added up, written here after each round.
    pub metrics: Option<PathBuf>,
}

/// Browses: one round, whose answer is whether any node was found; or with `watch`, round
/// after round until writing fails. A round that fails ends a single browse; with `watch` it
/// is logged and the next round follows.
pub async fn browse(b: &Browse, out: &Output) -> Result<bool, BrowseError> {
    let mut last: Option<String> = None;
    let mut ready = false;
    // With --watch, what earlier rounds heard, held for its TTL.
    let mut carried = Seen::default();
    let mut tally = Tally::default();
    loop {
        let heard = listen(b).await.and_then(|fresh| {
            let refused = fresh.seen.refused();
            let seen = if out.watch {
                for (m, from, at) in &fresh.responses {
                    carried.receive_at(m, *from, *at);
                }
                carried.expire(std::time::Instant::now());
                &carried
            } else {
                &fresh.seen
            };
            let found = found(b, seen)?;
            report(&found, fresh.off_link, refused);
            if fresh.overflow > 0 {
                tracing::warn!(
                    "{} response(s) past {MAX_RESPONSES} in a round: not taken in",
                    fresh.overflow
                );
            }
            tally.add(Round {
                nodes: found.inventory.nodes().len(),
                left_out: found.dropped.len(),
                off_link: fresh.off_link,
                refused,
                overflow: fresh.overflow,
            });
            Ok(found)
        });
        if let Some(path) = &out.metrics {
            write(path, &tally.text())?;
        }
        let found = match heard {
            Ok(f) => f,
            Err(e) if out.watch => {
                eprintln!("mdns-publish browse: {e}");
                // A round that fails at once (no interface holds --bind yet) would otherwise
                // spin: wait a round before the next.
                tokio::time::sleep(b.round).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        eprintln!(
            "mdns-publish browse: {} instance(s) of {}, {} node(s)",
            found.instances,
            b.kind,
            found.inventory.nodes().len()
        );
        let text = render(&found, out.json);
        if last.as_deref() != Some(text.as_str()) {
            match &out.file {
                Some(path) => {
                    write(path, &text)?;
                }
                None => print!("{text}"),
            }
            last = Some(text);
        }
        if out.watch && !ready {
            // systemd (Type=notify): the first inventory is written; what reads it may start.
            ready = true;
            ipi_core::service::notify_systemd("READY=1");
        }
        if !out.watch {
            return Ok(!found.inventory.nodes().is_empty());
        }
    }
}
