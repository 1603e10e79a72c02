//! keepalived's `use_vmac` beside keepalived 2.2.7, in one group: the VIP is answered on the
//! wire with RFC 5798's virtual router MAC address (00:00:5e:00:01:VRID), the adverts come from
//! it (or from the interface's own MAC with `vmac_xmit_base`), and a client whose gratuitous
//! ARPs are all dropped (a netdev ingress rule) is served by the new master within the VRRP
//! timers after the master stops, because its ARP entry never has to change. The control: the
//! same failover without `use_vmac` leaves the client unserved for as long. The macvlan goes
//! when vrrpd exits; a reload with the same file keeps it and the VIP.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ipi_lab::{wait_for, Host, Lab};
use ipi_net_tests::vrrp::dissect;
use ipi_net_tests::vrrp::{Router, Speaker};
use nix::sys::signal::Signal;
use support::{answers, decode, mac, until, Responder, Seen};

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

const VRID: u8 = 51;
const VMAC: &str = "00:00:5e:00:01:33";
const VIP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 200);
const LINK: &str = "vrrp.51";
/// The failover bound: the backup's Master_Down_Interval at 0.2 s adverts (3 * 0.2 s +
/// Skew_Time) after the master stops, with room for a loaded machine.
const BOUND: Duration = Duration::from_secs(3);

/// How the instance uses a VMAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// No `use_vmac`: the control.
    Without,
    /// `use_vmac`.
    Vmac,
    /// `use_vmac` and `vmac_xmit_base`.
    XmitBase,
}

fn conf(host: &Host, priority: u8, mode: Mode) -> String {
    let vmac = match mode {
        Mode::Without => "",
        Mode::Vmac => "    use_vmac\n",
        Mode::XmitBase => "    use_vmac\n    vmac_xmit_base\n",
    };
    format!(
        "global_defs {{\n    router_id {}\n}}\n\nvrrp_instance VI_1 {{\n    state BACKUP\n    \
         interface eth0\n    virtual_router_id {VRID}\n    priority {priority}\n    version 3\n    \
         advert_int 0.2\n{vmac}    virtual_ipaddress {{\n        {VIP}/32\n    }}\n}}\n",
        host.name()
    )
}

fn start(host: &Host, speaker: Speaker, priority: u8, mode: Mode) -> Router {
    let program = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    Router::start_with(
        host,
        speaker,
        &conf(host, priority, mode),
        priority,
        Some(&program),
    )
    .unwrap()
}

/// `ip -d link show LINK` in `host` as JSON, None when there is no such link.
fn link(host: &Host, name: &str) -> Option<serde_json::Value> {
    let out = host
        .run("ip", ["-j", "-d", "link", "show", "dev", name])
        .unwrap();
    if !out.success {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    Some(v[0].clone())
}

/// Whether `host` holds the VIP on `dev`.
fn holds_on(host: &Host, dev: &str) -> bool {
    let out = host.run("ip", ["-j", "addr", "show", "dev", dev]).unwrap();
    out.success && out.stdout.contains(&format!("\"{VIP}\""))
}

/// The client drops every gratuitous ARP for the VIP (sender and target address the VIP) at
/// its interface, before its ARP code sees it; the counter says how many.
fn drop_garps(client: &Host) {
    let rules = format!(
        "table netdev nogarp {{\n  chain in {{\n    type filter hook ingress device eth0 priority \
         0;\n    arp saddr ip {VIP} arp daddr ip {VIP} counter drop\n  }}\n}}\n"
    );
    let path = client.dir().join("nogarp.nft");
    std::fs::write(&path, rules).unwrap();
    client
        .run_ok("nft", ["-f", path.to_str().unwrap()])
        .unwrap();
}

fn garps_dropped(client: &Host) -> u64 {
    let out = client
        .run_ok("nft", ["list", "table", "netdev", "nogarp"])
        .unwrap();
    out.stdout
        .split("packets ")
        .skip(1)
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// What the client's ARP entry for the VIP should say: the virtual MAC, or without
/// `use_vmac` the holder's own.
fn want(holder: &Host, mode: Mode) -> String {
    if mode == Mode::Without {
        mac(holder)
    } else {
        VMAC.to_string()
    }
}

/// The client sends one UDP datagram to the VIP, to a port `holder` listens on and never
/// answers from, and waits for its ARP entry: resolved by its own request and the reply.
fn resolve(client: &Host, holder: &Host) {
    let port = 9078;
    let _listener = holder
        .within(|| std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, port)))
        .unwrap();
    client
        .within(|| {
            let s = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
            s.send_to(b"who", (VIP, port)).map(|_| ())
        })
        .unwrap();
    let resolved = wait_for(Duration::from_secs(3), Duration::from_millis(10), || {
        client
            .neighbour(IpAddr::V4(VIP))
            .is_some_and(|n| n.lladdr.is_some() && !n.state.iter().any(|s| s == "INCOMPLETE"))
    });
    assert!(resolved.is_some(), "the client never resolved {VIP}");
}

fn neighbour_mac(client: &Host) -> Option<String> {
    client.neighbour(IpAddr::V4(VIP)).and_then(|n| n.lladdr)
}

/// The macvlan of a router running `use_vmac`: on eth0, mode private, the virtual MAC, up or
/// down as `up` says.
fn assert_vmac(host: &Host, who: &str, up: bool) {
    let l = link(host, LINK).unwrap_or_else(|| panic!("{who}: no {LINK}"));
    assert_eq!(l["address"], VMAC, "{who}: {l}");
    assert_eq!(l["link"], "eth0", "{who}: {l}");
    assert_eq!(l["linkinfo"]["info_kind"], "macvlan", "{who}: {l}");
    assert_eq!(l["linkinfo"]["info_data"]["mode"], "private", "{who}: {l}");
    let flags = l["flags"].to_string();
    assert_eq!(flags.contains("\"UP\""), up, "{who}: {LINK} up: {l}");
}

/// One group: `first` is the master (150), `second` the backup (100); both run `mode`.
/// Checks what the client and the wire see, stops the master and returns how long the client
/// went unserved.
fn failover(first: Speaker, second: Speaker, mode: Mode) -> Duration {
    let mut lab = Lab::new().unwrap();
    let (m, b) = (lab.host("m").unwrap(), lab.host("b").unwrap());
    let client = lab.host("client").unwrap();
    let _answer = [&m, &b].map(Responder::start);
    let what = format!(
        "{} master, {} backup, {mode:?}",
        first.name(),
        second.name()
    );
    let capture = lab.capture("vmac", "arp or ip proto 112").unwrap();
    let backup = start(&b, second, 100, mode);
    let mut master = start(&m, first, 150, mode);
    let dev = if mode == Mode::Without { "eth0" } else { LINK };
    started(&m, &b, (&master, &backup), mode, &what);
    before_failover(&client, &m, &master, mode, &what);
    drop_garps(&client);
    // The master stops: the backup must serve the client within the timers.
    let stopped = Instant::now();
    master.daemon.signal(Signal::SIGTERM).unwrap();
    // The client asks again once m has given the VIP up: an answer from keepalived on m
    // would teach the client m's eth0 MAC (see above) and spoil what is measured.
    until(
        &format!("{what}: m gives the VIP up"),
        BOUND,
        &[&master.daemon],
        || !holds_on(&m, dev),
    );
    let served = wait_for(BOUND * 3, Duration::from_millis(20), || {
        answers(&client, IpAddr::V4(VIP)).as_deref() == Some("b")
    });
    let unserved = served.map_or(BOUND * 3, |_| stopped.elapsed());
    master.daemon.wait(Duration::from_secs(5)).unwrap();
    let file = capture.stop().unwrap();
    if mode != Mode::Without {
        after_failover(&file, &client, (&m, &b), (first, second), mode, &what);
    }
    if unserved >= BOUND && mode != Mode::Without {
        eprintln!(
            "{what}: unserved for {unserved:?}\n{}\n{}",
            master.daemon.log(),
            backup.daemon.log()
        );
    }
    drop(backup);
    unserved
}

/// Both routers run: m holds the VIP (on the macvlan with `use_vmac`), b does not; both
/// macvlans are there, the master's up, the backup's up with keepalived 2.2.7 and down with
/// vrrpd, which sends nothing from the virtual MAC as a backup (net::vmac).
fn started(m: &Host, b: &Host, (master, backup): (&Router, &Router), mode: Mode, what: &str) {
    let dev = if mode == Mode::Without { "eth0" } else { LINK };
    until(
        &format!("{what}: m holds the VIP on {dev}"),
        Duration::from_secs(10),
        &[&master.daemon, &backup.daemon],
        || holds_on(m, dev),
    );
    assert!(!holds_on(b, dev), "{what}: the backup holds the VIP too");
    if mode != Mode::Without {
        assert_vmac(m, &format!("{what}: master"), true);
        assert_vmac(
            b,
            &format!("{what}: backup"),
            backup.speaker == Speaker::Keepalived,
        );
    }
}

/// The client learns the VIP's MAC from its own ARP request: a datagram that m takes
/// without answering (an answer needs m to find the client's MAC, see below). A vrrpd master
/// also serves it: vrrpd's answers leave through eth0, and with its arp_announce 2 the kernel
/// asks for the client's MAC from eth0's own address, so the client's entry for the VIP
/// keeps the virtual MAC (keepalived asks from the VIP, and the client's entry takes its
/// eth0's MAC: see [`after_failover`]).
fn before_failover(client: &Host, m: &Host, master: &Router, mode: Mode, what: &str) {
    resolve(client, m);
    let want = want(m, mode);
    assert_eq!(
        neighbour_mac(client).as_deref(),
        Some(want.as_str()),
        "{what}: the client's ARP entry for the VIP"
    );
    if master.speaker == Speaker::Vrrpd {
        until(
            &format!("{what}: the client is served by m"),
            Duration::from_secs(5),
            &[&master.daemon],
            || answers(client, IpAddr::V4(VIP)).as_deref() == Some("m"),
        );
        assert_eq!(
            neighbour_mac(client).as_deref(),
            Some(want.as_str()),
            "{what}: the client's ARP entry once served"
        );
    }
}

/// After a failover with `use_vmac`: every gratuitous ARP of the new master was dropped at
/// the client; the wire as [`wire_checks`] wants it; the old master's macvlan gone with it.
/// Served by the new master, the client's entry says the virtual MAC with vrrpd; keepalived
/// 2.2.7's ARP request for the client (from its eth0, the VIP as sender) moves it to its
/// eth0's own MAC, where it stays after keepalived's next failover.
fn after_failover(
    file: &std::path::Path,
    client: &Host,
    (m, b): (&Host, &Host),
    (first, second): (Speaker, Speaker),
    mode: Mode,
    what: &str,
) {
    let seen = decode(file);
    assert!(
        garps_dropped(client) > 0,
        "{what}: no gratuitous ARP reached the client's rule\n{seen}"
    );
    let after = if second == Speaker::Vrrpd {
        VMAC.to_string()
    } else {
        mac(b)
    };
    assert_eq!(
        neighbour_mac(client),
        Some(after),
        "{what}: the client's entry once served by b"
    );
    wire_checks(file, &seen, m, b, mode, what);
    assert!(
        link(m, LINK).is_none(),
        "{what}: {LINK} is still on m after {} exited",
        first.name()
    );
}

/// On the wire: the ARP replies for the VIP come from the virtual MAC (Ethernet and ARP
/// sender), and the adverts of both routers from it (or from each router's own MAC with
/// `vmac_xmit_base`).
fn wire_checks(file: &std::path::Path, seen: &Seen, m: &Host, b: &Host, mode: Mode, what: &str) {
    let vip = VIP.to_string();
    let replies: Vec<_> = seen
        .arps
        .iter()
        .filter(|a| a.opcode == 2 && a.sender_ip == vip)
        .collect();
    assert!(
        !replies.is_empty(),
        "{what}: no ARP reply for the VIP\n{seen}"
    );
    for r in &replies {
        assert_eq!(
            (r.eth_src.as_str(), r.sender_mac.as_str()),
            (VMAC, VMAC),
            "{what}: {r:?}"
        );
    }
    let frames: Vec<(String, String)> = dissect(file, "vrrp", &["ip.src", "eth.src"])
        .unwrap()
        .into_iter()
        .map(|f| (f[0].clone(), f[1].clone()))
        .collect();
    for (host, name) in [(m, "m"), (b, "b")] {
        let from: Vec<&String> = frames
            .iter()
            .filter(|(src, _)| *src == host.ipv4().to_string())
            .map(|(_, eth)| eth)
            .collect();
        assert!(!from.is_empty(), "{what}: no advert from {name}\n{seen}");
        let want = if mode == Mode::XmitBase {
            mac(host)
        } else {
            VMAC.to_string()
        };
        assert!(
            from.iter().all(|e| **e == want),
            "{what}: {name}'s adverts come from {from:?}, not {want}"
        );
    }
}

#[test]
fn use_vmac_beside_keepalived_the_client_keeps_the_virtual_mac_across_a_failover() {
    if !ipi_lab::available()
        || !ipi_lab::tool("keepalived", "keepalived")
        || !ipi_lab::tool("nft", "nftables")
        || !ipi_lab::tool("tshark", "tshark")
    {
        return;
    }
    let (v, k) = (Speaker::Vrrpd, Speaker::Keepalived);
    for mode in [Mode::XmitBase, Mode::Vmac] {
        for (first, second) in [(k, v), (v, k)] {
            let unserved = failover(first, second, mode);
            eprintln!(
                "{} master, {} backup, {mode:?}: unserved {unserved:?}",
                first.name(),
                second.name()
            );
            assert!(
                unserved < BOUND,
                "{} master, {} backup, {mode:?}: the client was unserved for {unserved:?}",
                first.name(),
                second.name()
            );
        }
    }
    // The control: without use_vmac the client's entry names the old master's MAC, and with
    // its gratuitous ARPs dropped it is not served again within the bound.
    let unserved = failover(v, k, Mode::Without);
    assert!(
        unserved >= BOUND,
        "without use_vmac the client was served again after {unserved:?}: the test cannot tell"
    );
}

fn conf_at(a: &Host, priority: u8) -> String {
    conf(a, priority, Mode::Vmac)
}

/// A SIGHUP to `router` on `a`, whose log then says `logged`: the VIP never leaves the
/// macvlan, which keeps its index `index`.
fn reload_keeps(a: &Host, router: &Router, logged: &str, index: &serde_json::Value) {
    let before = router.daemon.log().matches(logged).count();
    let watcher = a.clone();
    let holds = support::Sampler::start(move || holds_on(&watcher, LINK));
    router.daemon.signal(Signal::SIGHUP).unwrap();
    until(
        &format!("the reload ({logged})"),
        Duration::from_secs(5),
        &[&router.daemon],
        || router.daemon.log().matches(logged).count() > before,
    );
    std::thread::sleep(Duration::from_millis(500));
    let samples = holds.stop();
    assert!(
        samples.iter().all(|(_, h)| *h),
        "the VIP left {LINK} during the reload ({logged})\n{}",
        router.daemon.log()
    );
    assert_eq!(
        &link(a, LINK).unwrap()["ifindex"],
        index,
        "{LINK} was made again by the reload ({logged})"
    );
}

#[test]
fn a_reload_keeps_the_macvlan_and_the_vip_and_exit_removes_it() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let mut router = start(&a, Speaker::Vrrpd, 150, Mode::Vmac);
    until(
        "a holds the VIP on the macvlan",
        Duration::from_secs(10),
        &[&router.daemon],
        || holds_on(&a, LINK),
    );
    assert_vmac(&a, "vrrpd", true);
    let index = link(&a, LINK).unwrap()["ifindex"].clone();
    // The same file (vrrpd sees nothing changed), then one with another priority, which
    // the running instance takes in place: the setup runs again and finds its macvlan.
    let conf = a.dir().join("keepalived.conf");
    for (priority, logged) in [(150, "did not change"), (160, "reloaded")] {
        std::fs::write(&conf, conf_at(&a, priority)).unwrap();
        reload_keeps(&a, &router, logged, &index);
    }
    router.daemon.signal(Signal::SIGTERM).unwrap();
    router.daemon.wait(Duration::from_secs(5)).unwrap();
    assert!(
        link(&a, LINK).is_none(),
        "{LINK} is still there after vrrpd exited"
    );
}

#[test]
fn an_interface_of_the_name_is_taken_over_made_again_or_left_alone() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    // Not a macvlan (a veth): left alone, and vrrpd does not start (keepalived would pick
    // vrrp1.51).
    a.run_ok(
        "ip",
        ["link", "add", LINK, "type", "veth", "peer", "name", "vp51"],
    )
    .unwrap();
    let mut router = start(&a, Speaker::Vrrpd, 150, Mode::Vmac);
    let code = router.daemon.wait(Duration::from_secs(5)).unwrap();
    assert!(
        code.is_some_and(|c| c != 0),
        "vrrpd ran beside a veth {LINK}"
    );
    assert!(
        router
            .daemon
            .log()
            .contains("exists and is a veth: left alone"),
        "{}",
        router.daemon.log()
    );
    assert_eq!(link(&a, LINK).unwrap()["linkinfo"]["info_kind"], "veth");
    a.run_ok("ip", ["link", "del", LINK]).unwrap();
    // A macvlan of the name in another mode and with another MAC: made again, as it should be.
    a.run_ok(
        "ip",
        [
            "link", "add", LINK, "link", "eth0", "type", "macvlan", "mode", "bridge",
        ],
    )
    .unwrap();
    let mut router = start(&a, Speaker::Vrrpd, 150, Mode::Vmac);
    until(
        "a holds the VIP on the macvlan made again",
        Duration::from_secs(10),
        &[&router.daemon],
        || holds_on(&a, LINK),
    );
    assert_vmac(&a, "made again", true);
    assert!(
        router.daemon.log().contains("made again"),
        "{}",
        router.daemon.log()
    );
    // Killed: the macvlan stays behind, up and with the VIP. The next run takes it over as
    // it is (same index), takes the VIP back and the macvlan down until it is master again.
    let index = link(&a, LINK).unwrap()["ifindex"].clone();
    router.daemon.signal(Signal::SIGKILL).unwrap();
    router.daemon.wait(Duration::from_secs(5)).unwrap();
    assert!(holds_on(&a, LINK), "the killed vrrpd's VIP");
    let router = start(&a, Speaker::Vrrpd, 150, Mode::Vmac);
    until(
        "the earlier run's macvlan taken over",
        Duration::from_secs(10),
        &[&router.daemon],
        || router.daemon.log().contains("taken over"),
    );
    until(
        "a holds the VIP again",
        Duration::from_secs(10),
        &[&router.daemon],
        || holds_on(&a, LINK),
    );
    assert_eq!(
        link(&a, LINK).unwrap()["ifindex"],
        index,
        "{LINK} was made again"
    );
    assert!(
        router.daemon.log().contains("left by an earlier run"),
        "{}",
        router.daemon.log()
    );
}

/// IPv6: the VIP on the macvlan with 00:00:5e:00:02:VRID, the adverts from the base
/// interface's link-local address on it, beside keepalived 2.2.7 either way round.
fn ipv6_failover(first: Speaker, second: Speaker) {
    let vip6: std::net::Ipv6Addr = "2001:db8::200".parse().unwrap();
    let vmac6 = "00:00:5e:00:02:33";
    let what = format!("IPv6: {} master, {} backup", first.name(), second.name());
    let mut lab = Lab::new().unwrap();
    let (m, b) = (lab.host("m").unwrap(), lab.host("b").unwrap());
    let client = lab.host("client").unwrap();
    let _answer = [&m, &b].map(Responder::start);
    let conf = |host: &Host, priority: u8| {
        format!(
            "global_defs {{\n    router_id {}\n}}\n\nvrrp_instance VI_6 {{\n    state BACKUP\n    \
             interface eth0\n    native_ipv6\n    virtual_router_id {VRID}\n    priority {priority}\n    \
             advert_int 0.2\n    use_vmac\n    virtual_ipaddress {{\n        {vip6}/128\n    }}\n}}\n",
            host.name()
        )
    };
    let program = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let backup = Router::start_with(&b, second, &conf(&b, 100), 100, Some(&program)).unwrap();
    let mut master = Router::start_with(&m, first, &conf(&m, 150), 150, Some(&program)).unwrap();
    let on = |host: &Host| {
        let out = host.run("ip", ["-j", "addr", "show", "dev", LINK]).unwrap();
        out.success && out.stdout.contains(&format!("\"{vip6}\""))
    };
    until(
        &format!("{what}: m holds the VIP"),
        Duration::from_secs(10),
        &[&master, &backup],
        || on(&m),
    );
    let l = link(&m, LINK).unwrap();
    assert_eq!(l["address"], vmac6, "{what}: {l}");
    until(
        &format!("{what}: served by m"),
        Duration::from_secs(5),
        &[&master, &backup],
        || answers(&client, IpAddr::V6(vip6)).as_deref() == Some("m"),
    );
    // The backup hears the master: it holds nothing (its macvlan, with keepalived, is up).
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        !on(&b),
        "{what}: the backup holds the VIP too\n{}",
        support::logs(&[&master, &backup])
    );
    let entry = || client.neighbour(IpAddr::V6(vip6)).and_then(|n| n.lladdr);
    assert_eq!(
        entry().as_deref(),
        Some(vmac6),
        "{what}: the client's entry"
    );
    master.daemon.signal(Signal::SIGTERM).unwrap();
    until(
        &format!("{what}: served by b"),
        BOUND,
        &[&master, &backup],
        || answers(&client, IpAddr::V6(vip6)).as_deref() == Some("b"),
    );
    assert_eq!(
        entry().as_deref(),
        Some(vmac6),
        "{what}: the client's entry after"
    );
    master.daemon.wait(Duration::from_secs(5)).unwrap();
    assert!(link(&m, LINK).is_none(), "{what}: {LINK} left on m");
}

#[test]
fn use_vmac_for_ipv6_beside_keepalived() {
    if !ipi_lab::available() || !ipi_lab::tool("keepalived", "keepalived") {
        return;
    }
    let (v, k) = (Speaker::Vrrpd, Speaker::Keepalived);
    ipv6_failover(v, k);
    ipv6_failover(k, v);
}
