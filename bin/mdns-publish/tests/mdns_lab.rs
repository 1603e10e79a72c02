//! mdns-publish in the lab: nodes publish what OpenShift publishes, a browse from another host
//! finds them all with their addresses and roles; a node that stops sends its goodbye and a
//! caching observer (avahi) drops it at once, while one that is killed stays cached; a second host claiming a node's name loses and exits non-zero without renaming; an
//! address change is seen (a VIP on the node is not its address); junk on the wire changes
//! nothing; dig gets a legacy unicast answer.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use ipi_lab::avahi::Avahi;
use ipi_lab::{wait_for, Daemon, Host, Lab};
use nix::sys::signal::Signal;

const BIN: &str = env!("CARGO_BIN_EXE_mdns-publish");

fn cluster(host: &Host) -> String {
    let path = ipi_lab::install_config(
        host.dir(),
        &["192.0.2.0/24"],
        &["192.0.2.100"],
        &["192.0.2.101"],
    );
    path.display().to_string()
}

fn publish(host: &Host, hostname: &str, role: &str) -> Daemon {
    let cluster = cluster(host);
    let bind = host.ipv4().to_string();
    host.spawn(
        "mdns-publish",
        BIN,
        [
            "run",
            "--cluster",
            &cluster,
            "--hostname",
            hostname,
            "--role",
            role,
            "--bind",
            &bind,
        ],
    )
    .unwrap()
}

fn browse(host: &Host, extra: &[&str]) -> (bool, String) {
    let bind = host.ipv4().to_string();
    let mut args = vec![
        "browse",
        "--filter",
        "lab",
        "--timeout",
        "1500ms",
        "--bind",
        bind.as_str(),
    ];
    args.extend_from_slice(extra);
    let out = host.command(BIN, &args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn five_nodes_are_found_with_their_roles_and_the_etcd_targets() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let names = [
        ("master-0", "master"),
        ("master-1", "master"),
        ("master-2", "master"),
        ("worker-0", "worker"),
        ("worker-1", "worker"),
    ];
    let hosts: Vec<Host> = names.iter().map(|(n, _)| lab.host(n).unwrap()).collect();
    let client = lab.host("client").unwrap();
    let daemons: Vec<Daemon> = hosts
        .iter()
        .zip(names)
        .map(|(h, (n, r))| publish(h, n, r))
        .collect();
    let logs = || {
        daemons
            .iter()
            .map(Daemon::log)
            .collect::<Vec<_>>()
            .join("\n")
    };
    // Probing and announcing take about 0.75 + 1 s.
    let mut last = String::new();
    let found = wait_for(Duration::from_secs(15), Duration::from_millis(200), || {
        let (ok, text) = browse(&client, &[]);
        last = text;
        ok && last.lines().filter(|l| !l.starts_with('#')).count() == 5
    });
    assert!(found.is_some(), "browse found:\n{last}\n{}", logs());
    for (h, (n, r)) in hosts.iter().zip(names) {
        let line = format!("{n} {r} {}", h.ipv4());
        assert!(
            last.lines().any(|l| l.starts_with(&line)),
            "{line} missing from:\n{last}"
        );
    }
    // JSON with the etcd targets, withheld below --min-srv.
    let (ok, json) = browse(&client, &["--json", "--min-srv", "3"]);
    assert!(ok, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["etcd"],
        serde_json::json!(["etcd-0.local.", "etcd-1.local.", "etcd-2.local."])
    );
    let (ok, json) = browse(&client, &["--json", "--min-srv", "4"]);
    assert!(ok, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["etcd"], serde_json::json!([]));
    assert_eq!(v["nodes"].as_array().map(Vec::len), Some(5), "{json}");

    // Nothing matching the filter: exit 1.
    let out = client
        .command(BIN, ["browse", "--filter", "other", "--timeout", "500ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

/// How long an observer may take to drop a node that said goodbye (RFC 6762 10.1: a record
/// with TTL 0 is kept for one more second), and how long one that did not must stay: far
/// below the records' TTLs (120 s and 75 min), so only a goodbye removes within it.
const GOODBYE_WINDOW: Duration = Duration::from_secs(5);

/// Whether avahi-browse (`-p`, watching) printed `sign` (`+` new, `-` removed) for the node's
/// instance over IPv4.
fn observed(observer: &Daemon, sign: &str, node: &str) -> bool {
    let instance = format!("lab\\032{node}");
    observer.stdout().lines().any(|l| {
        let f: Vec<&str> = l.split(';').collect();
        f.len() >= 4 && f[0] == sign && f[2] == "IPv4" && f[3] == instance
    })
}

#[test]
fn a_stopped_node_says_goodbye_and_a_killed_one_does_not() {
    if !ipi_lab::available()
        || !ipi_lab::tool("avahi-daemon", "avahi-daemon")
        || !ipi_lab::tool("avahi-browse", "avahi-utils")
    {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (stopped, killed, client) = (
        lab.host("worker-0").unwrap(),
        lab.host("worker-1").unwrap(),
        lab.host("client").unwrap(),
    );
    let mut daemons = [
        publish(&stopped, "worker-0", "worker"),
        publish(&killed, "worker-1", "worker"),
    ];
    let logs = |d: &[Daemon]| d.iter().map(Daemon::log).collect::<Vec<_>>().join("\n");
    // An observer that caches what it sees and keeps watching: the real avahi on the client.
    let avahi = Avahi::start(&client, "client").unwrap();
    let observer = avahi
        .spawn("avahi-browse", "avahi-browse", ["-p", "_workstation._tcp"])
        .unwrap();
    wait_for(Duration::from_secs(15), Duration::from_millis(100), || {
        observed(&observer, "+", "worker-0") && observed(&observer, "+", "worker-1")
    })
    .unwrap_or_else(|| panic!("{}\n{}", observer.log(), logs(&daemons)));

    // worker-1 dies without a word, worker-0 is stopped and says goodbye.
    daemons[1].signal(Signal::SIGKILL).unwrap();
    assert_eq!(daemons[1].wait(Duration::from_secs(5)).unwrap(), None);
    assert_eq!(daemons[0].stop(), Some(0), "{}", daemons[0].log());
    assert!(
        daemons[0].log().contains("goodbye sent"),
        "{}",
        daemons[0].log()
    );
    let gone = wait_for(GOODBYE_WINDOW, Duration::from_millis(100), || {
        observed(&observer, "-", "worker-0")
    });
    assert!(
        gone.is_some(),
        "avahi kept worker-0 after its goodbye:\n{}\n{}",
        observer.log(),
        logs(&daemons)
    );
    // The same window for the one that could not say goodbye: avahi still has it cached.
    let dropped = wait_for(GOODBYE_WINDOW, Duration::from_millis(100), || {
        observed(&observer, "-", "worker-1")
    });
    assert!(
        dropped.is_none(),
        "avahi dropped worker-1 with no goodbye: the window proves nothing\n{}",
        observer.log()
    );
}

#[test]
fn a_second_host_claiming_a_name_loses_and_does_not_rename() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (a, b, client) = (
        lab.host("a").unwrap(),
        lab.host("b").unwrap(),
        lab.host("client").unwrap(),
    );
    let mut first = publish(&a, "master-0", "master");
    wait_for(Duration::from_secs(10), Duration::from_millis(100), || {
        first.log().contains("published")
    })
    .unwrap_or_else(|| panic!("{}", first.log()));
    let mut second = publish(&b, "master-0", "master");
    let exited = second.wait(Duration::from_secs(10));
    assert_eq!(
        exited.ok().flatten(),
        Some(1),
        "the loser must exit 1:\n{}",
        second.log()
    );
    assert!(second.log().contains("name conflict"), "{}", second.log());
    // The winner still holds the name with its own address; nobody is called master-1.
    let (ok, text) = browse(&client, &[]);
    assert!(ok, "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("master-0 master {}", a.ipv4()))),
        "{text}"
    );
    assert!(!text.contains("master-1"), "{text}");
    assert!(first.running());
}

#[test]
fn malformed_datagrams_change_nothing_and_dig_gets_a_legacy_answer() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (node, client) = (lab.host("master-0").unwrap(), lab.host("client").unwrap());
    let mut d = publish(&node, "master-0", "master");
    wait_for(Duration::from_secs(10), Duration::from_millis(100), || {
        d.log().contains("published")
    })
    .unwrap_or_else(|| panic!("{}", d.log()));
    // Malformed datagrams, multicast and unicast, first: they change nothing.
    let target = std::net::SocketAddr::from((node.ipv4(), 5353));
    client
        .within(|| {
            let s = std::net::UdpSocket::bind("0.0.0.0:5353")?;
            let mut junk = vec![0u8; 12];
            for i in 0..200u32 {
                junk[2] = 0x84; // a response header...
                junk[7] = (i % 7) as u8; // ...announcing answers that are not there
                junk.extend_from_slice(&i.to_be_bytes());
                s.send_to(&junk, "224.0.0.251:5353")?;
                s.send_to(&junk[..(i as usize % junk.len())], target)?;
            }
            Ok(())
        })
        .unwrap();
    let server = format!("@{}", node.ipv4());
    let out = client
        .run(
            "dig",
            [
                "-p",
                "5353",
                server.as_str(),
                "master-0.local",
                "A",
                "+noall",
                "+answer",
                "+tries=1",
                "+time=2",
            ],
        )
        .unwrap();
    // master-0.local.  10  IN  A  192.0.2.1
    let answer: Vec<&str> = out.stdout.split_whitespace().collect();
    assert_eq!(answer.len(), 5, "{}", out.stdout);
    assert_eq!(answer[0], "master-0.local.");
    // RFC 6762 6.7: legacy unicast answers carry TTLs of at most 10 s (ours: 120 s, capped).
    assert_eq!(answer[1], "10", "TTL {}", answer[1]);
    assert_eq!(answer[4], node.ipv4().to_string());
    assert!(d.running(), "{}", d.log());
}

#[test]
fn watch_rewrites_the_inventory_only_when_it_changes_and_sees_an_address_change() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (node, client) = (lab.host("master-0").unwrap(), lab.host("client").unwrap());
    let d = publish(&node, "master-0", "master");
    // Its directory is not there yet: browse makes it (as /run/ipi-net/inventory under systemd).
    let out = client.dir().join("run/ipi-net/inventory/nodes");
    let metrics = client.dir().join("browse.prom");
    let bind = client.ipv4().to_string();
    let watch = client
        .spawn(
            "browse",
            BIN,
            [
                "browse",
                "--filter",
                "lab",
                "--timeout",
                "500ms",
                "--watch",
                "-o",
                out.to_str().unwrap(),
                "--bind",
                &bind,
                "--metrics",
                metrics.to_str().unwrap(),
            ],
        )
        .unwrap();
    let read = || std::fs::read_to_string(&out).unwrap_or_default();
    wait_for(Duration::from_secs(10), Duration::from_millis(100), || {
        read().contains("master-0 master")
    })
    .unwrap_or_else(|| panic!("{}\n{}", read(), d.log()));
    // Unchanged rounds (three more of them, counted in the watcher's metrics) leave the file
    // alone.
    let mtime = || std::fs::metadata(&out).unwrap().modified().unwrap();
    let before = mtime();
    let rounds = || {
        let text = std::fs::read_to_string(&metrics).unwrap_or_default();
        (text.lines())
            .find_map(|l| {
                l.strip_prefix("ipi_mdns_browse_rounds_total ")?
                    .parse()
                    .ok()
            })
            .unwrap_or(0u64)
    };
    let so_far = rounds();
    wait_for(Duration::from_secs(15), Duration::from_millis(100), || {
        rounds() >= so_far + 3
    })
    .unwrap_or_else(|| panic!("no further rounds:\n{}", watch.log()));
    assert_eq!(mtime(), before, "rewritten without a change");
    // A new address on the node: probed, announced, and in the inventory.
    assert!(
        node.run("ip", ["addr", "add", "192.0.2.77/24", "dev", "eth0"])
            .unwrap()
            .success
    );
    wait_for(Duration::from_secs(10), Duration::from_millis(100), || {
        read().contains("192.0.2.77")
    })
    .unwrap_or_else(|| panic!("{}\n{}", read(), d.log()));
    // The API VIP comes (as vrrpd adds it) with another address of the node's: the address is
    // published, the VIP is the cluster's and is not.
    for a in ["192.0.2.100/32", "192.0.2.78/24"] {
        assert!(
            node.run("ip", ["addr", "add", a, "dev", "eth0"])
                .unwrap()
                .success
        );
    }
    wait_for(Duration::from_secs(10), Duration::from_millis(100), || {
        read().contains("192.0.2.78")
    })
    .unwrap_or_else(|| panic!("{}\n{}", read(), d.log()));
    assert!(!read().contains("192.0.2.100"), "{}", read());
}

#[test]
fn two_hundred_instances_in_many_packets_are_all_browsed() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (node, client) = (lab.host("many").unwrap(), lab.host("client").unwrap());
    let mut conf = format!("bind_address: {}\nservices:\n", node.ipv4());
    for i in 0..200 {
        conf.push_str(&format!(
            "- name: instance {i}\n  host_name: many.local.\n  type: _http._tcp\n  port: {}\n",
            8000 + i
        ));
    }
    let path = node.dir().join("many.yaml");
    std::fs::write(&path, conf).unwrap();
    let d = node
        .spawn("mdns-publish", BIN, ["run", "-f", path.to_str().unwrap()])
        .unwrap();
    wait_for(Duration::from_secs(10), Duration::from_millis(100), || {
        d.log().contains("published")
    })
    .unwrap_or_else(|| panic!("{}", d.log()));
    let bind = client.ipv4().to_string();
    let out = client
        .command(
            BIN,
            [
                "browse",
                "--type",
                "_http._tcp",
                "--timeout",
                "5s",
                "--bind",
                &bind,
            ],
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("200 instance(s) of _http._tcp, 1 node(s)"),
        "{err}\n{}",
        d.log()
    );
}
