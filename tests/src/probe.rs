//! What a client on a lab host asks the cluster: the A records a DNS server gives
//! ([`dig`]), which server answers a plain HTTP request ([`get`]), how long after a fault a
//! VIP serves it again ([`first_answer`]), and how long its ARP cache would keep sending to a
//! VIP's old holder if nobody told it otherwise ([`stale_arp_floor`]).
//!
//! Apart from [`crate::cluster`] because they are the client side only: they know addresses
//! and names, not nodes or steps, and never fail a step (a lost answer is an observation).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use ipi_lab::{Host, Neighbour};

/// `dig @server` from `host` for the A records of `names`, in one run: name to addresses.
pub(crate) fn dig(
    host: &Host,
    server: Ipv4Addr,
    names: &[String],
) -> BTreeMap<String, Vec<String>> {
    let mut args = vec![
        format!("@{server}"),
        "+noall".into(),
        "+answer".into(),
        "+tries=1".into(),
        "+time=2".into(),
    ];
    for n in names {
        args.push(n.clone());
        args.push("A".into());
    }
    let mut out: BTreeMap<String, Vec<String>> =
        names.iter().map(|n| (n.clone(), Vec::new())).collect();
    let Ok(o) = host.run("dig", &args) else {
        return out;
    };
    for line in o.stdout.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [name, _, "IN", "A", address] = f.as_slice() {
            if let Some(list) = out.get_mut(name.trim_end_matches('.')) {
                list.push(address.to_string());
            }
        }
    }
    for list in out.values_mut() {
        list.sort();
    }
    out
}

/// One plain-HTTP request on a connection of its own, the connection given `connect` to open
/// and the answer three times that; the answering server's name.
pub(crate) fn get(to: SocketAddr, connect: Duration) -> std::io::Result<String> {
    let mut s = TcpStream::connect_timeout(&to, connect)?;
    s.set_read_timeout(Some(connect * 3))?;
    s.write_all(b"GET / HTTP/1.1\r\nHost: api\r\nConnection: close\r\n\r\n")?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    if !answer.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(format!("answer: {answer}")));
    }
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").trim();
    Ok(body.to_string())
}

/// The first answer a client got through a VIP after a fault.
#[derive(Debug, Clone)]
pub(crate) struct Served {
    /// From the fault to the answer.
    pub(crate) after: Duration,
    /// The answering server's name.
    pub(crate) answer: String,
    /// The client's neighbour entry for the VIP right after the answer: where it sent it.
    pub(crate) neighbour: Option<Neighbour>,
}

/// How long one attempt may wait for the TCP handshake: short, so that attempts follow each
/// other closely (a SYN sent to the old holder's MAC is lost, the next one may not be).
const ATTEMPT: Duration = Duration::from_millis(300);
/// Between attempts that failed at once (a refused connection).
const PAUSE: Duration = Duration::from_millis(20);

/// Requests from `host` to `to`, each on a new connection, one after the other until one is
/// answered by a server in `accept` or `limit` has passed since `start` (the fault): that
/// answer, timed from `start`. Answers by others (the old holder, before the fault took
/// hold) do not count. The requests are the test process's, on a thread inside `host`'s
/// network namespace: they use that host's ARP cache, as any program there would.
pub(crate) fn first_answer(
    host: &Host,
    to: SocketAddr,
    accept: &[String],
    start: Instant,
    limit: Duration,
) -> Option<Served> {
    let answer = host
        .within(|| {
            while start.elapsed() < limit {
                match get(to, ATTEMPT) {
                    Ok(name) if accept.contains(&name) => return Ok(Some((start.elapsed(), name))),
                    _ => std::thread::sleep(PAUSE),
                }
            }
            Ok(None)
        })
        .ok()
        .flatten()?;
    let (after, answer) = answer;
    Some(Served {
        after,
        answer,
        neighbour: host.neighbour(to.ip()),
    })
}

/// The least time `host`'s kernel keeps sending to an IPv4 neighbour's old MAC after the
/// last confirmation that it was reachable, when no ARP packet tells it of a new one: the
/// shortest REACHABLE time (half of `base_reachable_time_ms`), then `delay_first_probe_time`
/// in DELAY, then `ucast_solicit` unicast probes `retrans_time_ms` apart in PROBE; only then
/// does the entry fail and a broadcast request find the new holder. A gratuitous ARP from the
/// new holder cuts that short; a client served sooner than this after a VIP moved was told
/// by one. None when the values cannot be read.
pub(crate) fn stale_arp_floor(host: &Host) -> Option<Duration> {
    let read = |key: &str| -> Option<u64> {
        let o = host
            .run("sysctl", ["-n", &format!("net.ipv4.neigh.eth0.{key}")])
            .ok()?;
        o.stdout.trim().parse().ok()
    };
    let reachable = read("base_reachable_time_ms")? / 2;
    let delay = read("delay_first_probe_time")? * 1000;
    let probes = read("ucast_solicit")? * read("retrans_time_ms")?;
    Some(Duration::from_millis(reachable + delay + probes))
}
