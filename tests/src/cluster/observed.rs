//! What the steps observe from the client: a VIP's move, who holds the VIPs, each node's DNS
//! answers, how requests spread.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ipi_lab::Neighbour;

use crate::probe::Served;

/// A VIP that moved: from which node to which, how long after the fault the address was on
/// the new holder and the client was served through it again, and what the client's ARP
/// cache said before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// The node that held it.
    pub from: String,
    /// The node that holds it now.
    pub to: String,
    /// From the fault to the VIP on `to`'s eth0 (`ip addr` in its namespace).
    pub took: Duration,
    /// From the fault to the first request from the client through the VIP that a new holder
    /// served.
    pub served: Duration,
    /// From the fault to the first request answered with the client's ARP entry for the VIP
    /// on `to`'s MAC. Later than `served` when two nodes were master for a moment and the
    /// client heard the other's gratuitous ARPs last: until `to`'s next ones.
    pub settled: Duration,
    /// Who answered that request (an API server's name, `router on NODE`).
    pub answer: String,
    /// The node whose MAC the client's ARP entry for the VIP held right after that answer:
    /// where the request went.
    pub via: String,
    /// The client's ARP entry for the VIP just before the fault (the old holder's MAC).
    pub before: Neighbour,
}

/// Who holds the VIPs now (nodes still up only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holders {
    /// The nodes with the API VIP on eth0.
    pub api: Vec<String>,
    /// The nodes with the Ingress VIP on eth0.
    pub ingress: Vec<String>,
}

/// One node's DNS server asked from the client: name to addresses (empty: no answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsAnswers {
    /// The node whose dnsmasq answered.
    pub server: String,
    /// The answers, by name.
    pub answers: BTreeMap<String, Vec<String>>,
}

/// Requests through the API VIP: which server answered how many; how many got no answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spread {
    /// Answers by the name of the API server that gave them.
    pub answered: BTreeMap<String, usize>,
    /// Requests without an answer.
    pub failed: usize,
}

/// A fault watched from the client: what it talked to before, and its requests since.
#[derive(Debug)]
pub(super) struct Watch {
    /// The node that held the VIP.
    pub(super) from: String,
    /// The VIP and port the client asks.
    pub(super) to: SocketAddr,
    /// The answers that count: servers behind the new holders.
    pub(super) accept: Vec<String>,
    /// The client's ARP entry for the VIP just before the fault.
    pub(super) before: Neighbour,
    /// The fault.
    pub(super) start: Instant,
    /// The client's first answer since.
    pub(super) first: std::thread::JoinHandle<Option<Served>>,
}
