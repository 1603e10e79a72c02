//! A hostile host on the cluster's link against discovery: master-0 publishes, a client keeps
//! the inventory with `browse --watch` as the unit runs it, and an attacker host on the same
//! bridge forges what mDNS has no way to sign. Each attack is judged by the inventory the
//! client writes (what every node's DNS and lb-proxy's API servers come from) or by the
//! publisher staying up, and each has a positive control: the same packet, sent from where it
//! is legitimate (or the way that is), is taken, so the packet is well formed and the test
//! goes red when the defence is removed.

#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode};
use hickory_proto::rr::rdata::{PTR, SRV, TXT};
use hickory_proto::rr::{Name, RData, Record};
use ipi_core::Role;
use ipi_lab::{wait_for, Daemon, Host, Lab};
use mdns_publish::config::openshift;
use mdns_publish::key::ClusterKey;

const BIN: &str = env!("CARGO_BIN_EXE_mdns-publish");
const GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 251);
/// How long each attack goes on.
const ATTACK: Duration = Duration::from_secs(8);
/// The forgeries' spacing, at least: a claim on master-0's name sends it probing again, and a
/// second claim while it probes takes the name (the publisher exits), which is not what these
/// tests judge.
const FORGERY_GAP: Duration = Duration::from_millis(1100);

/// master-0 publishing, a client browsing into a file, an attacker.
struct Bench {
    _lab: Lab,
    node: Host,
    /// Where the browse runs: what is answered is what it asks.
    client: Host,
    attacker: Host,
    publisher: Daemon,
    browse: Daemon,
    inventory: PathBuf,
    /// The browse's `--metrics` file.
    metrics: PathBuf,
}

impl Bench {
    /// A sample of the browse's metrics file (`name` with its labels), 0 when absent.
    fn metric(&self, name: &str) -> u64 {
        let text = std::fs::read_to_string(&self.metrics).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or(0)
    }
}

fn bench() -> Bench {
    bench_with(None)
}

/// The bench with the cluster key `key` given to the publisher and the browse.
fn bench_with(key: Option<&str>) -> Bench {
    let mut lab = Lab::new().unwrap();
    let node = lab.host("master-0").unwrap();
    let client = lab.host("client").unwrap();
    let attacker = lab.host("attacker").unwrap();
    let cluster = ipi_lab::install_config(
        node.dir(),
        &["192.0.2.0/24"],
        &["192.0.2.100"],
        &["192.0.2.101"],
    );
    let (cluster, bind) = (cluster.display().to_string(), node.ipv4().to_string());
    let key_file = node.dir().join("cluster.key");
    let keyed: Vec<String> = match key {
        Some(k) => {
            std::fs::write(&key_file, k).unwrap();
            vec!["--cluster-key".into(), key_file.display().to_string()]
        }
        None => vec![],
    };
    let with_key = |args: &[&str]| -> Vec<String> {
        (args.iter().map(|a| a.to_string()))
            .chain(keyed.iter().cloned())
            .collect()
    };
    let args = [
        "run",
        "--cluster",
        &cluster,
        "--hostname",
        "master-0",
        "--role",
        "master",
        "--bind",
        &bind,
    ];
    let publisher = node.spawn("mdns-publish", BIN, with_key(&args)).unwrap();
    let inventory = client.dir().join("nodes");
    let metrics = client.dir().join("browse.prom");
    let (out, bind) = (inventory.display().to_string(), client.ipv4().to_string());
    let metrics_arg = metrics.display().to_string();
    let args = [
        "browse",
        "--filter",
        "lab",
        "--timeout",
        "500ms",
        "--watch",
        "-o",
        &out,
        "--bind",
        &bind,
        "--metrics",
        &metrics_arg,
    ];
    let browse = client.spawn("browse", BIN, with_key(&args)).unwrap();
    let b = Bench {
        _lab: lab,
        node,
        client,
        attacker,
        publisher,
        browse,
        inventory,
        metrics,
    };
    b.wait_for_inventory("master-0 found", |t| t.contains("master-0 master"));
    let published = wait_for(Duration::from_secs(10), Duration::from_millis(50), || {
        b.publisher.stderr().contains("published")
    });
    assert!(published.is_some(), "{}", b.publisher.log());
    b
}

impl Bench {
    fn read(&self) -> String {
        std::fs::read_to_string(&self.inventory).unwrap_or_default()
    }

    fn wait_for_inventory(&self, what: &str, ok: impl Fn(&str) -> bool) {
        let seen = wait_for(Duration::from_secs(15), Duration::from_millis(50), || {
            ok(&self.read())
        });
        assert!(
            seen.is_some(),
            "{what}: the inventory is\n{}\n{}\n{}",
            self.read(),
            self.browse.log(),
            self.publisher.log()
        );
    }

    /// For `ATTACK`: multicasts `records` (the browse asks from port 5353: answers to it are
    /// multicast) every `FORGERY_GAP`, from port 5353
    /// of `from`'s host, with IP TTL `ttl`; after each, and through the second after the last,
    /// `check` must hold.
    fn answer_browse(
        &self,
        from: &Host,
        records: &[Record],
        ttl: u32,
        check: impl Fn(&str) -> bool,
    ) {
        let listen = group_socket(&self.attacker);
        let send = from.within(|| mdns_socket(from)).unwrap();
        send.set_ttl(ttl).unwrap();
        send.set_multicast_ttl_v4(ttl).unwrap();
        let bytes = response(records);
        let end = Instant::now() + ATTACK;
        let (mut answered, mut queries) = (0, 0);
        let mut last = Instant::now();
        let mut buf = [0u8; 9000];
        while Instant::now() < end {
            // Right after a query of the browse's (or the socket's 200 ms timeout).
            let asked = listen
                .recv_from(&mut buf)
                .is_ok_and(|(_, q)| q.ip() == self.client.ipv4());
            queries += usize::from(asked);
            if last.elapsed() < FORGERY_GAP {
                continue;
            }
            // After the real answers (which come within a few milliseconds): what comes last
            // is what a receiver without the defence would keep.
            std::thread::sleep(Duration::from_millis(30));
            send.send_to(&bytes, SocketAddr::from((GROUP, 5353)))
                .unwrap();
            last = Instant::now();
            answered += 1;
            assert!(
                check(&self.read()),
                "after {answered} forged answers the inventory is\n{}\n{}",
                self.read(),
                self.browse.log()
            );
        }
        assert!(answered > 5, "only {answered} forgeries sent");
        // The browse kept asking through the attack (its refreshes are what a forgery races).
        assert!(queries > 0, "the browse asked nothing in {ATTACK:?}");
        // Two more rounds, in which what was forged last is taken in or not.
        let broken = wait_for(Duration::from_secs(1), Duration::from_millis(50), || {
            !check(&self.read())
        });
        assert!(
            broken.is_none(),
            "the inventory is\n{}\n{}",
            self.read(),
            self.browse.log()
        );
    }
}

/// A socket on port 5353 in `host` (beside a publisher's there), for sending.
fn mdns_socket(host: &Host) -> std::io::Result<UdpSocket> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&SocketAddr::from((host.ipv4(), 5353)).into())?;
    Ok(s.into())
}

/// The attacker's ear: port 5353 in its host, the mDNS group joined, a short read timeout.
fn group_socket(attacker: &Host) -> UdpSocket {
    attacker
        .within(|| {
            let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)?;
            s.set_reuse_address(true)?;
            s.set_reuse_port(true)?;
            s.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, 5353)).into())?;
            s.join_multicast_v4(&GROUP, &attacker.ipv4())?;
            s.set_multicast_if_v4(&attacker.ipv4())?;
            s.set_read_timeout(Some(Duration::from_millis(200)))?;
            Ok(UdpSocket::from(s))
        })
        .unwrap()
}

fn response(records: &[Record]) -> Vec<u8> {
    let mut m = Message::new();
    m.set_message_type(MessageType::Response)
        .set_op_code(OpCode::Query)
        .set_authoritative(true);
    for r in records {
        m.add_answer(r.clone());
    }
    m.to_vec().unwrap()
}

fn host_name(host: &str) -> Name {
    Name::from_ascii(format!("{host}.local.")).unwrap()
}

fn a(host: &str, address: Ipv4Addr, ttl: u32) -> Record {
    Record::from_rdata(host_name(host), ttl, RData::A(address.into()))
}

/// A whole control-plane node of cluster `lab`, as its publisher would answer.
fn whole_node(host: &str, address: Ipv4Addr) -> Vec<Record> {
    let kind = Name::from_ascii("_workstation._tcp.local.").unwrap();
    let label = format!("lab {host}");
    let instance = (Name::from_labels(vec![label.as_bytes()]).unwrap())
        .append_domain(&kind)
        .unwrap();
    let srv = SRV::new(0, 0, 42424, host_name(host));
    let txt = TXT::new(vec!["role=master".into()]);
    vec![
        Record::from_rdata(kind, 4500, RData::PTR(PTR(instance.clone()))),
        Record::from_rdata(instance.clone(), 120, RData::SRV(srv)),
        Record::from_rdata(instance, 4500, RData::TXT(txt)),
        a(host, address, 120),
    ]
}

/// `master-0.local A <attacker>` in answer to the browse's queries: master-0 keeps its own
/// address alone. Control: the same answer from master-0's own address is taken.
#[test]
fn a_forged_address_for_a_known_node_is_refused() {
    if !ipi_lab::available() {
        return;
    }
    let b = bench();
    let evil = b.attacker.ipv4();
    let forged = [a("master-0", evil, 120)];
    b.answer_browse(&b.attacker, &forged, 255, |t| {
        !t.contains(&evil.to_string())
    });
    assert!(b.read().contains("master-0 master"), "{}", b.read());
    assert!(b.browse.stderr().contains("refused"), "{}", b.browse.log());
    // The positive control: the same record from master-0's address is master-0's word.
    let own = [a("master-0", Ipv4Addr::new(192, 0, 2, 77), 120)];
    b.answer_browse(&b.node, &own, 255, |_| true);
    b.wait_for_inventory("master-0's own word taken", |t| t.contains("192.0.2.77"));
}

/// A whole node answered with IP TTL 64 (as a routed packet arrives): not in the inventory.
/// Control: the same answer with TTL 255 is taken. (Without a cluster key, a host on the link
/// can still announce a plausible new master with TTL 255: mDNS cannot tell.)
#[test]
fn a_node_announced_from_off_the_link_is_refused() {
    if !ipi_lab::available() {
        return;
    }
    let b = bench();
    let evil = b.attacker.ipv4();
    let node = whole_node("master-9", evil);
    b.answer_browse(&b.attacker, &node, 64, |t| !t.contains("master-9"));
    // The metrics say so too.
    let off_link = b.metric("ipi_mdns_browse_refused_total{reason=\"off_link\"}");
    assert!(
        off_link > 0,
        "no off-link refusal counted:\n{}",
        b.browse.log()
    );
    b.answer_browse(&b.attacker, &node, 255, |_| true);
    b.wait_for_inventory("the same node with TTL 255", |t| t.contains("master-9"));
}

/// master-0's records with TTL 0 (goodbyes) from the attacker: master-0 stays in the
/// inventory through every round.
#[test]
fn a_goodbye_from_another_host_removes_nothing() {
    if !ipi_lab::available() {
        return;
    }
    let b = bench();
    let goodbye: Vec<Record> = (whole_node("master-0", b.node.ipv4()).into_iter())
        .map(|mut r| {
            r.set_ttl(0);
            r
        })
        .collect();
    let file_before = b.read();
    b.answer_browse(&b.attacker, &goodbye, 255, |t| t == file_before);
}

/// A response claiming `master-0.local` sent to master-0's publisher: unicast, it is no
/// conflict at all; multicast, master-0 probes again and, nobody answering its probes,
/// keeps its name. The publisher never exits, and the client's inventory keeps master-0 with
/// its own address.
#[test]
fn a_forged_conflict_does_not_stop_the_publisher() {
    if !ipi_lab::available() {
        return;
    }
    let mut b = bench();
    let send = b.attacker.within(|| mdns_socket(&b.attacker)).unwrap();
    send.set_ttl(255).unwrap();
    send.set_multicast_ttl_v4(255).unwrap();
    let claim = response(&[a("master-0", b.attacker.ipv4(), 120)]);
    let unicast = SocketAddr::from((b.node.ipv4(), 5353));
    send.send_to(&claim, unicast).unwrap();
    let ignored = wait_for(Duration::from_secs(5), Duration::from_millis(50), || {
        b.publisher.stderr().contains("a unicast response")
    });
    assert!(ignored.is_some(), "{}", b.publisher.log());
    // The control: multicast, the same bytes make master-0 probe again.
    send.send_to(&claim, SocketAddr::from((GROUP, 5353)))
        .unwrap();
    let reprobed = wait_for(Duration::from_secs(5), Duration::from_millis(50), || {
        b.publisher.stderr().contains("probing again")
    });
    assert!(reprobed.is_some(), "{}", b.publisher.log());
    let kept = wait_for(Duration::from_secs(10), Duration::from_millis(50), || {
        b.publisher.stderr().contains("the names are still ours")
    });
    assert!(kept.is_some(), "{}", b.publisher.log());
    assert!(b.publisher.running(), "{}", b.publisher.log());
    let node = b.node.ipv4().to_string();
    b.wait_for_inventory("master-0 still itself", |t| {
        t.contains(&node) && !t.contains(&b.attacker.ipv4().to_string())
    });
}

/// With the cluster key on every node, a plausible new master announced with TTL 255 by a host
/// without the key is refused (master-0, signed, is found over the wire). Control: the same
/// node signed with the key (a host that has it) is taken.
#[test]
fn with_the_cluster_key_an_unsigned_master_is_refused() {
    if !ipi_lab::available() {
        return;
    }
    const KEY: &str = "lab cluster key, 32 bytes long..\n";
    let b = bench_with(Some(KEY));
    let evil = b.attacker.ipv4();
    let node = whole_node("master-9", evil);
    b.answer_browse(&b.attacker, &node, 255, |t| !t.contains("master-9"));
    assert!(
        b.browse.stderr().contains("master-9: no signature"),
        "{}",
        b.browse.log()
    );
    assert_eq!(b.metric("ipi_mdns_browse_nodes"), 1, "master-0 alone");
    let left_out = wait_for(Duration::from_secs(5), Duration::from_millis(50), || {
        b.metric("ipi_mdns_browse_left_out") > 0
    });
    assert!(
        left_out.is_some(),
        "the unsigned master is not counted as left out"
    );
    let key = ClusterKey::new(KEY.as_bytes(), std::path::Path::new("cluster.key")).unwrap();
    let mut p = openshift("lab", "master-9", Role::Master, &[evil.into()]).unwrap();
    key.sign(&mut p, std::time::SystemTime::now());
    let signed: Vec<Record> = p.records().unwrap().into_iter().map(|o| o.record).collect();
    b.answer_browse(&b.attacker, &signed, 255, |_| true);
    b.wait_for_inventory("the node signed with the key", |t| t.contains("master-9"));
}
