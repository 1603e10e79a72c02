//! Dual stack together (OpenShift MCO #4844): `vrrpd run --cluster` with an IPv4 and an IPv6
//! VIP for each role keeps both on one node, before and after the holder's link is cut, as a
//! client sees it over both families.
//!
//! Four masters, equal priorities (OpenShift's). Their IPv6 adverts come from link-local
//! addresses set to sort the other way round from their IPv4 addresses (as a node's DHCP or
//! SLAAC addresses often do), so RFC 5798 6.4.3's tie-break alone would give each family to
//! another node: the sync group `--cluster` renders per role decides both by the IPv4 member.
//! First the API holder's link is cut; then the next holder resigns (SIGTERM, priority 0), so
//! that the two left take over at the same instant (the same Skew_Time) and must break a tie.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use ipi_lab::{wait_for, Daemon, Host, Lab};
use nix::sys::signal::Signal;

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

/// The API pair and the Ingress pair, IPv4 first.
fn roles() -> [(&'static str, [IpAddr; 2]); 2] {
    [
        ("API", [ip("192.0.2.200"), ip("2001:db8::200")]),
        ("Ingress", [ip("192.0.2.201"), ip("2001:db8::201")]),
    ]
}

/// The track scripts `--scripts-dir` names, all healthy.
fn scripts(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for name in [
        "chk_ocp_script.sh",
        "chk_ocp_script_both.sh",
        "chk_ingress.sh",
    ] {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Host `n` of `count` gets link-local fe80::(count + 1 - n): the reverse of its IPv4 order.
fn reverse_link_local(host: &Host, n: usize, count: usize) {
    let run = |args: &[&str]| {
        let out = host.run("ip", args.iter().copied()).unwrap();
        assert!(out.success, "ip {args:?}: {}", out.stderr);
    };
    run(&["-6", "addr", "flush", "dev", "eth0", "scope", "link"]);
    let ll = format!("fe80::{}/64", count + 1 - n);
    run(&["-6", "addr", "add", &ll, "dev", "eth0"]);
}

fn start(host: &Host, config: &Path) -> Daemon {
    let dir = host.dir();
    let scripts_dir = dir.join("scripts");
    scripts(&scripts_dir);
    let state = dir.join("state");
    host.spawn(
        "vrrpd",
        env!("CARGO_BIN_EXE_vrrpd"),
        [
            "run",
            "--cluster",
            config.to_str().unwrap(),
            "--role",
            "master",
            "--interface",
            "eth0",
            "--scripts-dir",
            scripts_dir.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
        ],
    )
    .unwrap()
}

/// Who holds `vip` among `hosts` (their names).
fn holders(hosts: &[&Host], vip: IpAddr) -> Vec<String> {
    hosts
        .iter()
        .filter(|h| support::holds(h, vip))
        .map(|h| h.name().to_string())
        .collect()
}

/// The one host that holds both VIPs of the pair, each alone, if there is one.
fn pair_holder(hosts: &[&Host], pair: [IpAddr; 2]) -> Option<String> {
    let [v4, v6] = pair.map(|v| holders(hosts, v));
    (v4.len() == 1 && v4 == v6).then(|| v4[0].clone())
}

/// Waits until one host holds both VIPs of `pair` and the client reaches both through it;
/// then checks that nothing moves for `stable`. Returns the holder.
fn settled(
    hosts: &[&Host],
    client: &Host,
    (role, pair): (&str, [IpAddr; 2]),
    timeout: Duration,
    logs: &dyn Fn() -> String,
) -> String {
    let reached = wait_for(timeout, Duration::from_millis(50), || {
        pair_holder(hosts, pair).is_some_and(|holder| {
            pair.iter()
                .all(|v| support::answers(client, *v).as_deref() == Some(holder.as_str()))
        })
    });
    let Some(holder) = reached.and_then(|_| pair_holder(hosts, pair)) else {
        panic!(
            "{role}: no one node holds {pair:?} and answers on both (IPv4 {:?}, IPv6 {:?})\n{}",
            holders(hosts, pair[0]),
            holders(hosts, pair[1]),
            logs()
        );
    };
    // Stays put: a group that flaps (each node winning one family) would move within a
    // Master_Down_Interval (3.8 s at priority 65 / 70 and 1 s adverts).
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            pair_holder(hosts, pair).as_deref(),
            Some(holder.as_str()),
            "{role}: IPv4 on {:?}, IPv6 on {:?}\n{}",
            holders(hosts, pair[0]),
            holders(hosts, pair[1]),
            logs()
        );
    }
    eprintln!("{role}: both VIPs on {holder}, answered there over IPv4 and IPv6");
    holder
}

#[test]
fn both_families_of_a_role_stay_on_one_node_and_move_together() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let hosts: Vec<Host> = ["m0", "m1", "m2", "m3"]
        .iter()
        .map(|n| lab.host(n).unwrap())
        .collect();
    let client = lab.host("client").unwrap();
    for (n, h) in hosts.iter().enumerate() {
        reverse_link_local(h, n + 1, hosts.len());
    }
    let config =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dual-stack-install-config.yaml");
    let _answer: Vec<_> = hosts.iter().map(support::Responder::start).collect();
    let daemons: Vec<Daemon> = hosts.iter().map(|h| start(h, &config)).collect();
    let logs = || {
        daemons
            .iter()
            .map(Daemon::log)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let all: Vec<&Host> = hosts.iter().collect();
    // The API's scripts need three good runs 2 s apart before the priority is whole.
    let api = settled(&all, &client, roles()[0], Duration::from_secs(30), &logs);
    settled(&all, &client, roles()[1], Duration::from_secs(10), &logs);

    // Cut the API holder's link: the other two tie (equal priorities) and the IPv4 member's
    // tie-break decides both families.
    let holder = hosts.iter().find(|h| h.name() == api).unwrap();
    lab.link_down(holder).unwrap();
    let rest: Vec<&Host> = hosts.iter().filter(|h| h.name() != api).collect();
    let new = settled(&rest, &client, roles()[0], Duration::from_secs(15), &logs);
    assert_ne!(new, api);
    let ingress = settled(&rest, &client, roles()[1], Duration::from_secs(15), &logs);
    eprintln!("after cutting {api}: API on {new}, Ingress on {ingress}");

    // The new API holder resigns: the other two hear its priority 0 at once and take over
    // together after the same Skew_Time; only the IPv4 member's tie-break may decide.
    let at = hosts.iter().position(|h| h.name() == new).unwrap();
    daemons[at].signal(Signal::SIGTERM).unwrap();
    let rest: Vec<&Host> = rest.into_iter().filter(|h| h.name() != new).collect();
    let last = settled(&rest, &client, roles()[0], Duration::from_secs(15), &logs);
    assert_ne!(last, new);
    eprintln!("after {new} resigned: API on {last}");
}
