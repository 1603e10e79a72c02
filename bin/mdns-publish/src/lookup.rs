//! `mdns-publish browse`: rounds of one-shot queries and the inventory they give, once or
//! round after round; with `--watch --bind`, continuous querying ([`crate::watch`]) on the
//! wire.

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
use crate::watch::Watcher;

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
            r = net::recv_on(v6.as_ref().map(|(s, _)| s), &mut buf6) => {
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

/// Says in the log what a round left out: nodes that cannot be in the inventory, and what
/// [`report_refused`] says.
fn report(found: &Found, off_link: u64, refused: Refusals) {
    for d in &found.dropped {
        tracing::warn!("left out of the inventory: {d}");
    }
    report_refused(off_link, refused);
}

/// Says in the log what was refused: datagrams from off the link, records from a source that
/// does not own their name, records past the cap.
fn report_refused(off_link: u64, refused: Refusals) {
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
    if let (true, Some(bind)) = (out.watch, b.bind) {
        return follow(b, out, bind).await;
    }
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

/// The sockets of `browse --watch --bind`, on the interface that holds the address.
struct Sockets {
    link: Link,
    v4: Option<UdpSocket>,
    v6: Option<(UdpSocket, u32)>,
}

impl Sockets {
    fn open(bind: IpAddr) -> Result<Sockets, BrowseError> {
        let iface = net::interface(bind, None)?;
        let (v4, v6) = net::group_sockets(&iface)?;
        Ok(Sockets {
            link: iface.link.clone(),
            v4,
            v6: v6.map(|s| (s, iface.index)),
        })
    }

    /// Sends on the family of the address browsed from.
    async fn send(&self, packets: &[Vec<u8>], v6: bool) {
        for p in packets {
            let sent = match (&self.v4, &self.v6) {
                (Some(s), _) if !v6 => s.send_to(p, net::group(false, 0)).await,
                (_, Some((s, index))) if v6 => s.send_to(p, net::group(true, *index)).await,
                _ => continue,
            };
            if let Err(e) = sent {
                tracing::debug!("send a query: {e}");
            }
        }
    }
}

/// How long after a change the inventory is written: a burst of answers makes one write.
const WRITE_AFTER: Duration = Duration::from_millis(100);
/// The watcher is polled at least this often.
const POLL_AT_LEAST: Duration = Duration::from_millis(500);
/// ... and at most this often: its timers (hundreds at hundreds of nodes, each instance's
/// refresh and expiry) are served together, a poll looking at every instance once.
const POLL_AT_MOST: Duration = Duration::from_millis(100);

/// What `browse --watch` has written and counted.
struct Written {
    last: Option<String>,
    /// The nodes left out that were warned of (again only once they were back in).
    warned: std::collections::HashSet<String>,
    ready: bool,
    tally: Tally,
    /// The refusals counted into the tally so far.
    refused: Refusals,
    off_link: u64,
    counted_off_link: u64,
}

impl Written {
    /// Writes the inventory if it changed; tells systemd once the first is written.
    fn inventory(&mut self, b: &Browse, out: &Output, seen: &Seen) -> Result<(), BrowseError> {
        let found = match found(b, seen) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("mdns-publish browse: {e}");
                return Ok(());
            }
        };
        for d in &found.dropped {
            if !self.warned.contains(d) {
                tracing::warn!("left out of the inventory: {d}");
            }
        }
        self.warned = found.dropped.iter().cloned().collect();
        let text = render(&found, out.json);
        if self.last.as_deref() != Some(text.as_str()) {
            eprintln!(
                "mdns-publish browse: {} instance(s) of {}, {} node(s)",
                found.instances,
                b.kind,
                found.inventory.nodes().len()
            );
            match &out.file {
                Some(path) => {
                    write(path, &text)?;
                }
                None => print!("{text}"),
            }
            self.last = Some(text);
        }
        self.tally.nodes = found.inventory.nodes().len() as u64;
        self.tally.left_out = found.dropped.len() as u64;
        if !self.ready {
            self.ready = true;
            ipi_core::service::notify_systemd("READY=1");
        }
        Ok(())
    }

    /// Counts a round of the metrics (what was refused since the last) and writes them.
    fn metrics(&mut self, out: &Output, seen: &Seen) -> Result<(), BrowseError> {
        let now = seen.refused();
        let refused = Refusals {
            not_owner: now.not_owner - self.refused.not_owner,
            full: now.full - self.refused.full,
        };
        let off_link = self.off_link - self.counted_off_link;
        report_refused(off_link, refused);
        self.tally.add(Round {
            nodes: self.tally.nodes as usize,
            left_out: self.tally.left_out as usize,
            off_link,
            refused,
            overflow: 0,
        });
        (self.refused, self.counted_off_link) = (now, self.off_link);
        match &out.metrics {
            Some(path) => write(path, &self.tally.text()).map(drop),
            None => Ok(()),
        }
    }
}

/// `browse --watch --bind`: runs until writing fails. The first inventory is written a round
/// (`--timeout`) after the start, then whenever it changes; the metrics every round. A link or
/// address change opens the sockets again; an interface not there yet is waited for.
async fn follow(b: &Browse, out: &Output, bind: IpAddr) -> Result<bool, BrowseError> {
    let kinds = vec![
        name(&format!("{}.local.", b.kind))?,
        name(&format!("{ETCD_TYPE}.local."))?,
    ];
    let start = Instant::now();
    let seed = crate::publish::seed();
    let mut w = Watcher::new(kinds, &b.filter, bind, start.into_std(), seed);
    let link_watch = net::link_watch()?;
    let mut sockets: Option<Sockets> = None;
    let mut written = Written {
        last: None,
        warned: std::collections::HashSet::new(),
        ready: false,
        tally: Tally::default(),
        refused: Refusals::default(),
        off_link: 0,
        counted_off_link: 0,
    };
    let (mut write_at, mut metrics_at, mut poll_at) =
        (Some(start + b.round), start + b.round, start);
    let (mut buf, mut buf6) = (vec![0u8; 9000], vec![0u8; 9000]);
    loop {
        let Some(s) = &sockets else {
            match Sockets::open(bind) {
                Ok(s) => sockets = Some(s),
                Err(e) => {
                    eprintln!("mdns-publish browse: {e}");
                    tokio::time::sleep(b.round).await;
                }
            }
            continue;
        };
        let wake = write_at.map_or(poll_at, |t| t.min(poll_at)).min(metrics_at);
        let mut heard = None;
        tokio::select! {
            r = net::recv_on(s.v4.as_ref(), &mut buf) => heard = r.ok().map(|(n, a)| (buf[..n].to_vec(), a)),
            r = net::recv_on(s.v6.as_ref().map(|(s, _)| s), &mut buf6) => heard = r.ok().map(|(n, a)| (buf6[..n].to_vec(), a)),
            () = tokio::time::sleep_until(wake) => {}
            () = net::link_changed(&link_watch) => {
                sockets = None;
                continue;
            }
        }
        if let Some((bytes, arrival)) = heard {
            match Message::from_vec(&bytes) {
                Ok(m) if s.link.admit(&m, &arrival).is_ok() => {
                    w.receive(&m, &arrival, Instant::now().into_std());
                }
                Ok(_) => written.off_link += 1,
                Err(_) => {}
            }
        }
        let now = Instant::now();
        if now >= poll_at {
            let packets = w.poll(now.into_std());
            s.send(&packets, bind.is_ipv6()).await;
            poll_at =
                Instant::from_std(w.next_timeout()).clamp(now + POLL_AT_MOST, now + POLL_AT_LEAST);
        }
        if w.take_changed() && write_at.is_none() {
            write_at = Some(now + WRITE_AFTER);
        }
        if write_at.is_some_and(|t| now >= t) {
            write_at = None;
            written.inventory(b, out, w.seen())?;
        }
        if now >= metrics_at {
            metrics_at = now + b.round;
            written.metrics(out, w.seen())?;
        }
    }
}
