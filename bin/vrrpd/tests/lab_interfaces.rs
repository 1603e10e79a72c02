//! Interfaces that come late or whose address moves, judged by a client that connects to the
//! VIP (each router's [`Responder`] answers with its name): vrrpd started before its interface
//! exists waits in FAULT (the rest of its configuration running) and starts once the interface
//! appears; the address in `unicast_src_ip` taken by a new bridge (as OpenShift's
//! ovs-configuration does with br-ex) makes the instance FAULT, the other router takes over,
//! and no advert leaves the node from that address afterwards (a capture on the peer); an
//! interface deleted and made again is followed, as a capture on the new link hears.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use ipi_lab::{wait_for, Host, Lab};
use ipi_net_tests::vrrp::{Router, Speaker};
use support::{answers, logs, state_dir, until, wall_clock, Responder};

#[allow(
    dead_code,
    reason = "support is shared by the lab tests; each uses a part"
)]
mod support;

const POLL: Duration = Duration::from_millis(10);

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The status of the instance called `name` (null until it is there).
fn instance(host: &Host, name: &str) -> serde_json::Value {
    support::status(host)["instances"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["name"] == name)
        .cloned()
        .unwrap_or_default()
}

/// Runs `script` with sh in `host`; it must succeed.
fn sh(host: &Host, script: &str) {
    let out = host.run("sh", ["-ec", script]).unwrap();
    assert!(out.success, "{script}: {}", out.stderr);
}

/// Whether `dev` in `host` holds `address` now.
fn on(host: &Host, dev: &str, address: &str) -> bool {
    let out = host.run("ip", ["-o", "addr", "show", "dev", dev]).unwrap();
    out.success && out.stdout.contains(&format!(" {address}/"))
}

const LATE_VIP: &str = "192.0.2.220";
const DUMMY_VIP: &str = "203.0.113.100";

/// vrrpd or keepalived (with `dynamic_interfaces`, which vrrpd needs not) started on a host
/// whose eth0 does not exist yet, with a second instance on an interface that does; then eth0
/// appears. Returns how long after the client reached the VIP.
// One scenario read top to bottom: started without eth0, eth0 appears, the client is served.
#[allow(clippy::too_many_lines)]
fn late_interface(speaker: Speaker) -> Duration {
    let mut lab = Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let client = lab.host("client").unwrap();
    let _answer = Responder::start(&a);
    // eth0 is not there yet (renamed away and down, its address kept); dum0 (a veth whose peer
    // stays in the host) is.
    sh(
        &a,
        "ip link set eth0 down; ip link set eth0 name late0; \
         ip link add dum0 type veth peer name dum1; ip link set dum1 up; \
         ip addr add 203.0.113.1/24 dev dum0; ip link set dum0 up",
    );
    let instance_on = |name: &str, dev: &str, vrid: u8, vip: &str| {
        format!(
            "vrrp_instance {name} {{\n    interface {dev}\n    virtual_router_id {vrid}\n    \
             priority 150\n    advert_int 0.1\n    virtual_ipaddress {{\n        {vip}/32\n    \
             }}\n}}\n"
        )
    };
    let dynamic = if speaker == Speaker::Keepalived {
        "    dynamic_interfaces\n"
    } else {
        ""
    };
    let conf = format!(
        "global_defs {{\n    vrrp_version 3\n{dynamic}}}\n{}{}",
        instance_on("VI_1", "eth0", 73, LATE_VIP),
        instance_on("VI_2", "dum0", 74, DUMMY_VIP)
    );
    let program = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let mut d = Router::start_with(&a, speaker, &conf, 0, Some(&program))
        .unwrap()
        .daemon;
    assert!(d.running());
    let d = d;
    let all = [&d];
    // The rest of the configuration runs: VI_2 master on dum0.
    until("VI_2 master on dum0", Duration::from_secs(5), &all, || {
        on(&a, "dum0", DUMMY_VIP)
    });
    assert_eq!(answers(&client, ip(LATE_VIP)), None);
    if speaker == Speaker::Vrrpd {
        until(
            "VI_2 master in the status",
            Duration::from_secs(3),
            &all,
            || instance(&a, "VI_2")["state"] == "MASTER",
        );
        // VI_1 waits in FAULT, with the reason in the status, the state file and the log.
        let waiting = instance(&a, "VI_1");
        assert_eq!(waiting["state"], "FAULT", "{waiting}");
        let reason = waiting["reason"].as_str().unwrap_or_default().to_string();
        assert!(
            reason.contains("interface eth0 does not exist"),
            "{waiting}"
        );
        assert_eq!(
            std::fs::read_to_string(state_dir(&a).join("VI_1")).unwrap(),
            "FAULT\n"
        );
        assert!(
            d.stderr().contains("VI_1: FAULT: interface eth0"),
            "{}",
            d.log()
        );
    }
    // eth0 appears: VI_1 starts (Backup, then Master after its Master_Down_Interval:
    // 3 * 10 cs + (256 - 150) * 10 / 256 cs = 0.34 s) and the client reaches the VIP, within
    // that plus 3 s for a loaded box, the client's ARP and its connect.
    sh(&a, "ip link set late0 name eth0; ip link set eth0 up");
    let took = until("the client at a", Duration::from_millis(3340), &all, || {
        answers(&client, ip(LATE_VIP)).as_deref() == Some("a")
    });
    if speaker == Speaker::Vrrpd {
        until(
            "VI_1 master in the status",
            Duration::from_secs(3),
            &all,
            || instance(&a, "VI_1")["state"] == "MASTER",
        );
        assert!(
            d.stderr().contains("interface eth0 appeared: VI_1 start"),
            "{}",
            d.log()
        );
        // VI_2 was not restarted by it.
        assert_eq!(instance(&a, "VI_2")["transitions"], 2, "{}", d.log());
    }
    took
}

#[test]
fn an_instance_whose_interface_comes_late_waits_in_fault_then_starts_as_with_keepalived() {
    if !ipi_lab::available() {
        return;
    }
    for speaker in [Speaker::Vrrpd, Speaker::Keepalived] {
        let took = late_interface(speaker);
        eprintln!(
            "{}: eth0 appeared, the client reached the VIP after {took:?}",
            speaker.name()
        );
    }
}

#[test]
fn an_interface_deleted_and_created_again_is_followed() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let create = "ip link add dum0 type veth peer name dum1; ip link set dum1 up; \
                  ip addr add 203.0.113.1/24 dev dum0; ip link set dum0 up";
    sh(&a, create);
    let conf = format!(
        "global_defs {{\n    vrrp_version 3\n}}\nvrrp_instance VI_2 {{\n    interface dum0\n    \
         virtual_router_id 74\n    priority 150\n    advert_int 0.1\n    virtual_ipaddress {{\n        \
         {DUMMY_VIP}/32\n    }}\n}}\n"
    );
    let program = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let d = Router::start_with(&a, Speaker::Vrrpd, &conf, 150, Some(&program))
        .unwrap()
        .daemon;
    let all = [&d];
    until("VI_2 master on dum0", Duration::from_secs(5), &all, || {
        on(&a, "dum0", DUMMY_VIP) && instance(&a, "VI_2")["state"] == "MASTER"
    });
    sh(&a, "ip link del dum0");
    until("VI_2 FAULT", Duration::from_secs(3), &all, || {
        instance(&a, "VI_2")["state"] == "FAULT"
    });
    // Created again, under another index, up before it has an address (as when DHCP comes
    // later): the VIP goes on the new dum0 (not the old index) once the address is there.
    sh(
        &a,
        "ip link add dum0 type veth peer name dum1; ip link set dum1 up; ip link set dum0 up",
    );
    // What a peer on the new link hears: a capture on dum1, the veth's other end.
    let wire = a
        .capture_on("recreated", "dum1", "arp or ip proto 112")
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let addressed = wall_clock();
    sh(&a, "ip addr add 203.0.113.1/24 dev dum0");
    until(
        "VI_2 master on the new dum0",
        Duration::from_secs(5),
        &all,
        || on(&a, "dum0", DUMMY_VIP) && instance(&a, "VI_2")["state"] == "MASTER",
    );
    // A few adverts' worth (0.1 s each) for the capture.
    std::thread::sleep(Duration::from_millis(500));
    let seen = support::decode(&wire.stop().unwrap());
    heard_on_the_new_link(&seen, &support::mac_of(&a, "dum0"), addressed);
    assert!(
        d.stderr()
            .contains("interface dum0 was created again: its instances follow it"),
        "{}",
        d.log()
    );
}

/// Unicast VRRPv2, 1 s adverts, from `me` to `peer`.
/// On the link made again: nothing while dum0 had no address (FAULT sends nothing), then
/// adverts at priority 150 carrying the VIP from its address and a gratuitous ARP for the VIP
/// from the new dum0's MAC (an instance left on the old index would send neither there).
fn heard_on_the_new_link(seen: &support::Seen, mac: &str, addressed: Duration) {
    let adverts: Vec<_> = seen.adverts.iter().filter(|ad| ad.vrid == 74).collect();
    assert!(
        adverts.iter().all(|ad| ad.at >= addressed),
        "adverts before dum0 had an address\n{seen}"
    );
    let master = adverts
        .iter()
        .filter(|ad| {
            ad.src == "203.0.113.1"
                && ad.priority == 150
                && ad.addresses.iter().any(|v| v == DUMMY_VIP)
        })
        .count();
    assert!(master >= 2, "{master} adverts of VI_2 as master\n{seen}");
    let vip = ip(DUMMY_VIP);
    assert!(
        seen.garps(vip)
            .iter()
            .any(|g| g.eth_src == mac && g.at >= addressed),
        "no gratuitous ARP for {vip} from {mac}\n{seen}"
    );
}

fn unicast(priority: u8, me: &Host, peer: &Host, vip: &str) -> String {
    format!(
        "vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 75\n    priority \
         {priority}\n    advert_int 1\n    unicast_src_ip {}\n    unicast_peer {{\n        {}\n    \
         }}\n    virtual_ipaddress {{\n        {vip}/32\n    }}\n}}\n",
        me.ipv4(),
        peer.ipv4()
    )
}

const MOVED_VIP: &str = "192.0.2.221";

/// What was seen after a's address moved to br-ex.
struct Moved {
    /// How long until the client reached b, if it did within a bound.
    took: Option<Duration>,
    /// a's adverts after the move (its resignation, priority 0, within 200 ms aside).
    adverts_after: usize,
}

/// a (150) master and b (100), unicast, both running `speaker`; then a's address is taken by
/// a new bridge br-ex with eth0 as its port (ovs-configuration's move). A capture on b
/// records a's adverts.
// One scenario read top to bottom: a master, its address moved to br-ex, what b and the client saw.
#[allow(clippy::too_many_lines)]
fn moved_to_a_bridge(speaker: Speaker) -> Moved {
    let mut lab = Lab::new().unwrap();
    let (a, b, client, _answer) = support::two_routers(&mut lab);
    let program = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let start = |me: &Host, peer: &Host, priority: u8| {
        let conf = unicast(priority, me, peer, MOVED_VIP);
        Router::start_with(me, speaker, &conf, priority, Some(&program))
            .unwrap()
            .daemon
    };
    let (da, db) = (start(&a, &b, 150), start(&b, &a, 100));
    let all = [&da, &db];
    until("the client at a", Duration::from_secs(10), &all, || {
        answers(&client, ip(MOVED_VIP)).as_deref() == Some("a")
    });
    // b hears a's unicast adverts on its own eth0.
    let capture = b.capture("adverts", "ip proto 112").unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let address = a.ipv4();
    sh(
        &a,
        &format!(
            "ip link add br-ex type bridge; \
             ip link set br-ex address $(cat /sys/class/net/eth0/address); \
             ip addr del {address}/24 dev eth0; ip link set eth0 master br-ex; \
             ip addr add {address}/24 dev br-ex; ip link set br-ex up"
        ),
    );
    let moved = wall_clock();
    // b takes over (a resigned with priority 0: Skew_Time, 0.61 s; at the latest its
    // Master_Down_Interval, 3.61 s) and the client is served by b, within that plus 3 s for a
    // loaded box, the client's ARP and connect.
    let took = wait_for(Duration::from_millis(3610 + 3000), POLL, || {
        answers(&client, ip(MOVED_VIP)).as_deref() == Some("b")
    });
    if speaker == Speaker::Vrrpd {
        assert!(took.is_some(), "the client never reached b\n{}", logs(&all));
        // a is FAULT, with the reason in the status and the log.
        let vi = instance(&a, "VI_1");
        assert_eq!(vi["state"], "FAULT", "{vi}\n{}", logs(&all));
        let source = format!("unicast_src_ip {address} on eth0");
        let interfaces = vi["interfaces"].as_array().cloned().unwrap_or_default();
        let tracked = interfaces.iter().find(|i| i["name"] == source.as_str());
        assert_eq!(tracked.cloned().unwrap_or_default()["up"], false, "{vi}");
        let said = format!("{source}: the address is no longer on eth0");
        assert!(da.stderr().contains(&said), "{}", da.log());
        assert!(!on(&a, "eth0", MOVED_VIP) && !on(&a, "br-ex", MOVED_VIP));
        // b's status file is written at most once a second.
        until(
            "b master in its status",
            Duration::from_secs(3),
            &all,
            || instance(&b, "VI_1")["state"] == "MASTER",
        );
    }
    // Three of a's advert intervals more on the wire.
    std::thread::sleep(Duration::from_secs(3));
    let seen = support::decode(&capture.stop().unwrap());
    let a_ip = address.to_string();
    let from_a: Vec<_> = seen.adverts_from(&a_ip).collect();
    assert!(
        from_a.iter().any(|ad| ad.at < moved && ad.priority == 150),
        "a advertised before the move\n{seen}"
    );
    // After the move at most its resignation (priority 0) within 200 ms (for the router to
    // hear the address event on a loaded box), never its priority.
    let resigned =
        |ad: &&&support::Advert| ad.priority == 0 && ad.at <= moved + Duration::from_millis(200);
    let after = from_a
        .iter()
        .filter(|ad| ad.at > moved && !resigned(ad))
        .count();
    if speaker == Speaker::Vrrpd {
        assert_eq!(after, 0, "{seen}\n{}", da.log());
    }
    Moved {
        took,
        adverts_after: after,
    }
}

#[test]
fn a_source_address_taken_by_a_bridge_means_fault_and_the_backup_takes_over() {
    if !ipi_lab::available() || !ipi_lab::tool("tshark", "tshark") {
        return;
    }
    for speaker in [Speaker::Vrrpd, Speaker::Keepalived] {
        let m = moved_to_a_bridge(speaker);
        eprintln!(
            "{}: a's address moved to br-ex: the client reached b after {:?}; a's adverts after \
             the move: {}",
            speaker.name(),
            m.took,
            m.adverts_after
        );
    }
}
