//! mdns-publish beside avahi-daemon, in the same lab, one run, ratios printed
//! (mdns-publish / avahi; below 1.0 is better for every row).
//!
//! - Query-to-answer latency: a one-shot (legacy unicast) A query from another host, 200
//!   times; median and p99.
//! - Start to resolvable: from starting the responder until another host gets an answer for
//!   its name (probing and announcing included).
//! - Idle CPU and RSS over 10 s, publishing a host name and one instance.
//! - A browse of 200 instances: `mdns-publish browse` against `avahi-browse -rt`, both finding
//!   the 200 instances one publisher holds; wall time and instances found.
//!
//! - The cluster key's cost: 20 nodes publishing as the units run them (`run --cluster`), and a
//!   `browse --watch` of them, without a key and with one (avahi has none): the publishers'
//!   CPU from start until announced, and the browse's CPU over 10 s of rounds.
//!
//! `sudo cargo bench -p mdns-publish --bench vs_avahi` (it builds network namespaces; needs
//! avahi-daemon, avahi-utils and dbus: `scripts/bench` installs them).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};
use ipi_lab::avahi::Avahi;
use ipi_lab::{Daemon, Host, Lab};

const BIN: &str = env!("CARGO_BIN_EXE_mdns-publish");

fn main() {
    if !ipi_lab::has_net_admin() {
        eprintln!("vs_avahi: needs CAP_NET_ADMIN (run as root)");
        return;
    }
    let mut lab = Lab::new().unwrap();
    let ours_host = lab.host("ours").unwrap();
    let avahi_host = lab.host("theirs").unwrap();
    let client = lab.host("client").unwrap();

    // Start to resolvable.
    let start = Instant::now();
    let ours = publish(&ours_host, "node-1");
    let ours_ready = until_answered(&client, ours_host.ipv4().into(), "node-1.local.", start);
    let start = Instant::now();
    let avahi = Avahi::start(&avahi_host, "node-2").unwrap();
    let avahi_ready = until_answered(&client, avahi_host.ipv4().into(), "node-2.local.", start);

    // Latency.
    let ours_latency = latency(&client, ours_host.ipv4().into(), "node-1.local.");
    let avahi_latency = latency(&client, avahi_host.ipv4().into(), "node-2.local.");

    // Idle.
    let idle = |d: &Daemon| {
        let before = d.usage();
        std::thread::sleep(Duration::from_secs(10));
        let after = d.usage();
        (
            (after.cpu - before.cpu).as_secs_f64() * 1000.0,
            after.rss_kib as f64,
        )
    };
    let (ours_cpu, ours_rss) = idle(&ours);
    let (avahi_cpu, avahi_rss) = idle(avahi.daemon());

    let (ours_browse, ours_found, avahi_browse, avahi_found) = browse_many(&mut lab, &client);
    let unkeyed = key_cost(&mut lab, &client, None);
    let keyed = key_cost(
        &mut lab,
        &client,
        Some("bench-cluster-key-0123456789abcdef"),
    );

    println!("\n| benchmark | avahi | mdns-publish | ratio |");
    println!("| --- | --- | --- | --- |");
    let row = |label: &str, theirs: f64, mine: f64, unit: &str| {
        println!(
            "| {label} | {theirs:.2} {unit} | {mine:.2} {unit} | {:.2} |",
            mine / theirs
        );
    };
    row(
        "start until another host resolves the name",
        avahi_ready,
        ours_ready,
        "ms",
    );
    row(
        "query-to-answer, median (legacy unicast A)",
        avahi_latency.0,
        ours_latency.0,
        "ms",
    );
    row(
        "query-to-answer, p99",
        avahi_latency.1,
        ours_latency.1,
        "ms",
    );
    row("idle CPU over 10 s", avahi_cpu, ours_cpu, "ms");
    row("RSS", avahi_rss, ours_rss, "KiB");
    row(
        "browse of 200 instances: wall time",
        avahi_browse,
        ours_browse,
        "ms",
    );
    println!(
        "\nbrowse of 200 instances: avahi-browse resolved {avahi_found}, mdns-publish browse found {ours_found} \
         (mdns-publish browse listens for a fixed --timeout, here 1 s; avahi-browse -t stops when its cache is exhausted)"
    );
    print_key_cost(&unkeyed, &keyed);
}

/// The cluster key's rows.
fn print_key_cost(unkeyed: &KeyCost, keyed: &KeyCost) {
    println!("\n| the cluster key, {KEY_NODES} nodes | no key | with the key | ratio |");
    println!("| --- | --- | --- | --- |");
    let row = |label: &str, without: f64, with: f64| {
        println!(
            "| {label} | {without:.1} ms | {with:.1} ms | {:.2} |",
            with / without
        );
    };
    row(
        "publishers' CPU, start until announced (all nodes)",
        unkeyed.publish_cpu,
        keyed.publish_cpu,
    );
    row(
        "browse --watch CPU over 10 s",
        unkeyed.browse_cpu,
        keyed.browse_cpu,
    );
    println!(
        "\nnodes in the inventory: {} without the key, {} with it",
        unkeyed.found, keyed.found
    );
}

/// Nodes of the cluster-key benchmark.
const KEY_NODES: usize = 20;

/// What the cluster key costs (or not, without one): CPU in ms.
struct KeyCost {
    publish_cpu: f64,
    browse_cpu: f64,
    found: usize,
}

/// [`KEY_NODES`] nodes publishing with `key` (or none), and a `browse --watch` of them from
/// `client` with the same key: the publishers' CPU from start until announced (3 s), the
/// browse's over 10 s, and how many nodes its inventory holds at the end.
fn key_cost(lab: &mut Lab, client: &Host, key: Option<&str>) -> KeyCost {
    let tag = if key.is_some() { "k" } else { "n" };
    let cluster = cluster(client);
    let key_file = client.dir().join(format!("cluster-{tag}.key"));
    let keyed: Vec<String> = key.map_or_else(Vec::new, |k| {
        std::fs::write(&key_file, k).unwrap();
        vec!["--cluster-key".into(), key_file.display().to_string()]
    });
    let publishers: Vec<Daemon> = (0..KEY_NODES)
        .map(|i| {
            let host = lab.host(&format!("{tag}node-{i}")).unwrap();
            let (name, bind) = (format!("master-{tag}{i}"), host.ipv4().to_string());
            let args = [
                "run",
                "-q",
                "--cluster",
                &cluster,
                "--hostname",
                &name,
                "--role",
                "master",
                "--bind",
                &bind,
            ];
            let args = args.iter().map(|a| a.to_string());
            host.spawn("mdns-publish", BIN, args.chain(keyed.iter().cloned()))
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    let publish_cpu: f64 = publishers
        .iter()
        .map(|d| d.usage().cpu.as_secs_f64() * 1000.0)
        .sum();
    let out = client.dir().join(format!("nodes-{tag}"));
    let (out_arg, bind) = (out.display().to_string(), client.ipv4().to_string());
    let args = [
        "browse",
        "--filter",
        "lab",
        "--timeout",
        "500ms",
        "--watch",
        "-o",
        &out_arg,
    ];
    let args = args
        .iter()
        .map(|a| a.to_string())
        .chain(["--bind".to_string(), bind]);
    let browse = client
        .spawn("browse", BIN, args.chain(keyed.iter().cloned()))
        .unwrap();
    let before = browse.usage().cpu;
    std::thread::sleep(Duration::from_secs(10));
    let browse_cpu = (browse.usage().cpu - before).as_secs_f64() * 1000.0;
    let inventory = std::fs::read_to_string(&out).unwrap_or_default();
    let found = inventory
        .lines()
        .filter(|l| l.contains(&format!("master-{tag}")))
        .count();
    drop(browse);
    drop(publishers);
    KeyCost {
        publish_cpu,
        browse_cpu,
        found,
    }
}

/// A browse of 200 instances, all held by one mdns-publish: `mdns-publish browse` and
/// `avahi-browse` from `client`, each with its wall time (ms) and what it found.
fn browse_many(lab: &mut Lab, client: &Host) -> (f64, usize, f64, usize) {
    let many = lab.host("many").unwrap();
    let _many = publish_many(&many, 200);
    std::thread::sleep(Duration::from_secs(3));
    let bind = client.ipv4().to_string();
    let t = Instant::now();
    let out = client
        .command(
            BIN,
            [
                "browse",
                "--type",
                "_http._tcp",
                "--timeout",
                "1s",
                "--bind",
                &bind,
            ],
        )
        .output()
        .unwrap();
    let ours_browse = t.elapsed().as_secs_f64() * 1000.0;
    // "mdns-publish browse: N instance(s) of _http._tcp, 1 node(s)"
    let ours_found: usize = String::from_utf8_lossy(&out.stderr)
        .split_whitespace()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let browser = Avahi::start(client, "client").unwrap();
    let t = Instant::now();
    let out = browser.run("avahi-browse", ["-rtp", "_http._tcp"]).unwrap();
    let avahi_browse = t.elapsed().as_secs_f64() * 1000.0;
    let avahi_found = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("=;") && l.contains(";IPv4;"))
        .count();

    (ours_browse, ours_found, avahi_browse, avahi_found)
}

fn cluster(host: &Host) -> String {
    let path = ipi_lab::install_config(
        host.dir(),
        &["192.0.2.0/24"],
        &["192.0.2.100"],
        &["192.0.2.101"],
    );
    path.display().to_string()
}

fn publish(host: &Host, name: &str) -> Daemon {
    let cluster = cluster(host);
    let bind = host.ipv4().to_string();
    host.spawn(
        "mdns-publish",
        BIN,
        [
            "run",
            "-q",
            "--cluster",
            &cluster,
            "--hostname",
            name,
            "--role",
            "worker",
            "--bind",
            &bind,
        ],
    )
    .unwrap()
}

fn publish_many(host: &Host, n: usize) -> Daemon {
    let mut conf = format!("bind_address: {}\nservices:\n", host.ipv4());
    for i in 0..n {
        conf.push_str(&format!(
            "- name: instance {i}\n  host_name: many.local.\n  type: _http._tcp\n  port: {}\n",
            8000 + i
        ));
    }
    let path = host.dir().join("many.yaml");
    std::fs::write(&path, conf).unwrap();
    host.spawn(
        "mdns-many",
        BIN,
        ["run", "-q", "-f", path.to_str().unwrap()],
    )
    .unwrap()
}

/// A one-shot A query for `name` to `server`, from `client`: the round trip, or None.
fn ask(socket: &UdpSocket, server: SocketAddr, name: &str, id: u16) -> Option<Duration> {
    let mut m = Message::new();
    m.set_message_type(MessageType::Query)
        .set_op_code(OpCode::Query)
        .set_id(id);
    m.add_query(Query::query(Name::from_ascii(name).unwrap(), RecordType::A));
    let bytes = m.to_vec().unwrap();
    let t = Instant::now();
    socket.send_to(&bytes, server).ok()?;
    let mut buf = [0u8; 1500];
    loop {
        let (n, _) = socket.recv_from(&mut buf).ok()?;
        if let Ok(a) = Message::from_vec(&buf[..n]) {
            if a.id() == id && !a.answers().is_empty() {
                return Some(t.elapsed());
            }
        }
    }
}

fn client_socket(client: &Host) -> UdpSocket {
    client
        .within(|| {
            let s = UdpSocket::bind("0.0.0.0:0")?;
            s.set_read_timeout(Some(Duration::from_millis(50)))?;
            Ok(s)
        })
        .unwrap()
}

/// ms from `start` until `server` answers for `name`.
fn until_answered(client: &Host, server: std::net::IpAddr, name: &str, start: Instant) -> f64 {
    let s = client_socket(client);
    let to = SocketAddr::new(server, 5353);
    let mut id = 1;
    while ask(&s, to, name, id).is_none() {
        id += 1;
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{name} never answered"
        );
    }
    start.elapsed().as_secs_f64() * 1000.0
}

/// (median, p99) ms of 200 one-shot queries.
fn latency(client: &Host, server: std::net::IpAddr, name: &str) -> (f64, f64) {
    let s = client_socket(client);
    s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let to = SocketAddr::new(server, 5353);
    let mut all: Vec<f64> = (0..200u16)
        .filter_map(|i| {
            std::thread::sleep(Duration::from_millis(5));
            ask(&s, to, name, 1000 + i).map(|d| d.as_secs_f64() * 1000.0)
        })
        .collect();
    all.sort_by(f64::total_cmp);
    (all[all.len() / 2], all[all.len() * 99 / 100])
}
