//! keepalived.conf as OpenShift renders it, read into the model; bad files give every error
//! with its file and line.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use ipi_core::vrrp::{Auth, Version};
use vrrpd::config::{self, TrackedScript};
use vrrpd::fsm::InitialState;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/seeds")
        .join(name)
}

#[test]
fn the_managed_master_config() {
    let c = config::load(&fixture("managed-keepalived-master.conf")).unwrap();
    assert!(c.global.enable_script_security);
    assert_eq!(c.global.script_user.as_ref().unwrap().user, "root");
    assert_eq!(c.global.vrrp_version, Version::V2);
    let lb = c.script("chk_ocp_lb").unwrap();
    assert_eq!(
        lb.command.words,
        [
            "/usr/bin/timeout",
            "1.9",
            "/etc/keepalived/chk_ocp_script.sh"
        ]
    );
    assert_eq!(
        (lb.interval, lb.timeout),
        (Duration::from_secs(2), Duration::from_secs(2))
    );
    assert_eq!((lb.weight, lb.rise, lb.fall), (20, 3, 2));
    assert_eq!(c.script("chk_ocp_both").unwrap().weight, 5);
    let ingress = c.script("chk_ingress").unwrap();
    assert_eq!(
        (ingress.weight, ingress.interval),
        (50, Duration::from_secs(1))
    );
    assert_eq!(
        ingress.command.words.last().unwrap(),
        "http://localhost:1936/healthz/ready"
    );

    let api = c.instance("managed_API").unwrap();
    assert_eq!(api.state, Some(InitialState::Backup));
    assert_eq!(api.interface, "ens3");
    assert_eq!((api.vrid, api.priority, api.advert_int_cs), (124, 40, 100));
    assert_eq!(
        api.auth_pass.as_ref().map(|p| p.expose()),
        Some("managed_api_vip")
    );
    assert_eq!(api.auth(), Auth::pass("managed_api_vip"));
    assert_eq!(api.vips.len(), 1);
    assert_eq!(api.vips[0].address.to_string(), "10.0.0.5");
    assert_eq!(api.vips[0].prefix_len, 32);
    assert_eq!(
        api.track_scripts,
        [
            TrackedScript {
                name: "chk_ocp_lb".into(),
                weight: None
            },
            TrackedScript {
                name: "chk_ocp_both".into(),
                weight: None
            }
        ]
    );
    assert_eq!(api.effective_version(&c.global), Version::V2);
    assert!(api.preempt && !api.is_unicast());
    let ingress = c.instance("managed_INGRESS").unwrap();
    assert_eq!((ingress.vrid, ingress.priority), (75, 20));
    // auth_pass is longer than 8 bytes: only the first 8 count, as in keepalived.
    assert_eq!(ingress.auth(), Auth::pass("managed_"));
}

#[test]
fn the_managed_worker_config() {
    let c = config::load(&fixture("managed-keepalived-worker.conf")).unwrap();
    assert_eq!(c.instances.len(), 1);
    assert_eq!(c.instances[0].name, "managed_INGRESS");
}

#[test]
fn everything_else_of_an_instance() {
    let text = r#"
global_defs {
    vrrp_version 3
    vrrp_garp_master_refresh 60
}
vrrp_script chk { script "/bin/true"
    user nobody nogroup
    timeout 0.5
    init_fail
}
vrrp_instance V6 {
    interface eth0
    virtual_router_id 9
    priority 255
    advert_int 0.1
    unicast_src_ip 2001:db8::1
    unicast_peer {
        2001:db8::2
        2001:db8::3
    }
    virtual_ipaddress { 2001:db8::100/64 }
    track_script { chk weight -30 }
    track_interface {
        eth1 weight 10
        eth2
    }
    notify "/usr/local/bin/notify arg"
    notify_master /bin/master
    preempt_delay 2.5
    garp_master_repeat 3
}
vrrp_instance V4 {
    interface eth0
    virtual_router_id 9
    virtual_ipaddress {
        192.0.2.100/24 dev eth1 label eth1:vip
    }
    nopreempt
}
vrrp_sync_group G {
    group {
        V6
        V4
    }
    notify_fault "/bin/fault now"
}
"#;
    let c = config::parse_str(text, "x.conf").unwrap();
    assert_eq!(c.global.garp.master_refresh_cs, 6000);
    let chk = c.script("chk").unwrap();
    assert_eq!(chk.timeout, Duration::from_millis(500));
    assert_eq!(chk.user.as_ref().unwrap().group.as_deref(), Some("nogroup"));
    assert!(chk.init_fail);
    let v6 = c.instance("V6").unwrap();
    assert!(v6.is_ipv6() && v6.is_unicast());
    assert_eq!(v6.effective_version(&c.global), Version::V3);
    assert_eq!(v6.advert_int_cs, 10);
    assert_eq!(v6.unicast_peers.len(), 2);
    assert_eq!(v6.vips[0].prefix_len, 64);
    assert_eq!(v6.track_scripts[0].weight, Some(-30));
    assert_eq!(v6.track_interfaces[0].weight, 10);
    assert_eq!(v6.track_interfaces[1].weight, 0);
    assert_eq!(
        v6.notify.any.as_ref().unwrap().words,
        ["/usr/local/bin/notify", "arg"]
    );
    assert_eq!(v6.notify.master.as_ref().unwrap().words, ["/bin/master"]);
    assert_eq!(v6.preempt_delay_cs, 250);
    assert_eq!(v6.garp.master_repeat, 3);
    assert_eq!(v6.garp.master_refresh_cs, 6000);
    let v4 = c.instance("V4").unwrap();
    assert!(!v4.preempt);
    assert_eq!(v4.vips[0].dev.as_deref(), Some("eth1"));
    assert_eq!(v4.vips[0].label.as_deref(), Some("eth1:vip"));
    assert_eq!(v4.effective_version(&c.global), Version::V3);
    assert_eq!(c.sync_groups[0].members, ["V6", "V4"]);
    assert_eq!(
        c.sync_groups[0].notify.fault.as_ref().unwrap().words,
        ["/bin/fault", "now"]
    );
}

#[test]
fn unicast_peers_with_keepalived_ttl_ranges() {
    let text = "\
vrrp_instance U {
    interface eth0
    virtual_router_id 7
    unicast_src_ip 192.0.2.1
    unicast_peer {
        192.0.2.2 min_ttl 255 max_ttl 255
        192.0.2.3 max_ttl 64
        192.0.2.4
    }
    virtual_ipaddress { 192.0.2.100/24 }
}
";
    let c = config::parse_str(text, "u.conf").unwrap();
    let u = c.instance("U").unwrap();
    assert_eq!(u.unicast_peers.len(), 3);
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    assert_eq!(u.peer_ttl.get(&ip("192.0.2.2")), Some(&(255, 255)));
    assert_eq!(u.peer_ttl.get(&ip("192.0.2.3")), Some(&(0, 64)));
    assert_eq!(u.peer_ttl.get(&ip("192.0.2.4")), None);
    // What is written reads back the same.
    let written = config::write::write(&c);
    assert!(
        written.contains("192.0.2.3 min_ttl 0 max_ttl 64"),
        "{written}"
    );
    let again = config::parse_str(&written, "w.conf").unwrap();
    assert_eq!(again.instance("U").unwrap().peer_ttl, u.peer_ttl);
    // Bad ranges and options are errors at their line.
    for (peer, error) in [
        (
            "192.0.2.2 min_ttl 200 max_ttl 100",
            "u.conf:6: unicast_peer 192.0.2.2: min_ttl 200 > max_ttl 100",
        ),
        (
            "192.0.2.2 min_ttl 256",
            "u.conf:6: unicast_peer 192.0.2.2: `min_ttl 256`: must be a TTL from 0 to 255",
        ),
        (
            "192.0.2.2 max_ttl",
            "u.conf:6: unicast_peer 192.0.2.2: `max_ttl` needs a value",
        ),
        (
            "192.0.2.2 ttl 5",
            "u.conf:6: unicast_peer 192.0.2.2: `ttl`: not an option",
        ),
        (
            "192.0.2.3",
            "u.conf:7: unicast_peer 192.0.2.3: listed twice",
        ),
    ] {
        let bad = text.replace("192.0.2.2 min_ttl 255 max_ttl 255", peer);
        let errors = config::parse_str(&bad, "u.conf").unwrap_err().to_string();
        assert!(
            errors.contains(error),
            "{peer}: missing {error:?} in:\n{errors}"
        );
    }
}

#[test]
fn every_error_is_reported_with_its_place() {
    let text = "\
vrrp_script s {
    interval 1
}
vrrp_instance A {
    interface eth0
    virtual_router_id 1
    virtual_ipaddress {
        192.0.2.1
        2001:db8::1
    }
    unicast_peer {
        2001:db8::2
    }
}
vrrp_instance B {
    interface eth0
    virtual_router_id 1
    version 2
    native_ipv6
    priority 255
    nopreempt
}
vrrp_sync_group G {
    group {
        A
        ghost
    }
}
vrrp_sync_group H {
    group {
        A
    }
}
";
    let errors = config::parse_str(text, "bad.conf").unwrap_err().to_string();
    let want = [
        "bad.conf:1: vrrp_script s: `script` is required",
        "bad.conf:4: vrrp_instance A: virtual_ipaddress mixes IPv4 and IPv6",
        "bad.conf:4: vrrp_instance A: unicast_peer 2001:db8::2 is not of the instance's family (IPv4)",
        "bad.conf:15: vrrp_instance B: VRRPv2 carries IPv4 only",
        "bad.conf:15: vrrp_instance B: the address owner (priority 255) always preempts",
        "bad.conf:23: vrrp_sync_group G: `ghost` names no vrrp_instance",
        "bad.conf:29: vrrp_sync_group H: vrrp_instance A is already in another sync group",
    ];
    for w in want {
        assert!(errors.contains(w), "missing {w:?} in:\n{errors}");
    }
}

#[test]
fn the_check_config_command() {
    let run = |path: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_vrrpd"))
            .arg("check-config")
            .arg("-f")
            .arg(path)
            .output()
            .unwrap()
    };
    let ok = run(&fixture("managed-keepalived-master.conf"));
    assert_eq!(ok.status.code(), Some(0));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.conf");
    std::fs::write(&bad, "vrrp_instance A {\n  priority 0\n}\nbogus\n").unwrap();
    let out = run(&bad);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("bad.conf:2: `priority 0`: must be a whole number from 1 to 255"),
        "{err}"
    );
    assert!(err.contains("bad.conf:4: unknown keyword `bogus`"), "{err}");
    let missing = run(&dir.path().join("nope.conf"));
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8(missing.stderr)
        .unwrap()
        .contains("nope.conf: cannot read it"));
}

/// One instance block of the VRID tests: `mode` is what follows the VIP (unicast lines).
fn vrid_instance(name: &str, vip: &str, mode: &str) -> String {
    format!(
        "vrrp_instance {name} {{\n    interface eth0\n    virtual_router_id 7\n    \
         virtual_ipaddress {{\n        {vip}\n    }}\n{mode}}}\n"
    )
}

/// keepalived's rule (vrrp.c): unicast and multicast are separate VRID spaces, and so are
/// unicast instances with different sources; vrrpd refuses what would share one socket.
#[test]
fn a_vrid_is_shared_between_sockets_but_not_within_one() {
    let unicast = |src: &str, peer: &str| {
        format!("    unicast_src_ip {src}\n    unicast_peer {{\n        {peer}\n    }}\n")
    };
    let accepted = [
        vrid_instance("M", "198.51.100.7", ""),
        vrid_instance("U1", "203.0.113.7", &unicast("192.0.2.1", "192.0.2.2")),
        vrid_instance("U2", "203.0.113.8", &unicast("192.0.2.3", "192.0.2.2")),
        vrid_instance("M6", "2001:db8:1::7", ""),
        vrid_instance(
            "U6",
            "2001:db8:2::7",
            &unicast("2001:db8::1", "2001:db8::2"),
        ),
    ]
    .concat();
    let c = config::parse_str(&accepted, "ok.conf").unwrap();
    assert_eq!(c.instances.len(), 5);

    let refused = [
        vrid_instance("M", "198.51.100.7", ""),
        vrid_instance("M2", "198.51.100.8", ""),
        vrid_instance("U1", "203.0.113.7", &unicast("192.0.2.1", "192.0.2.2")),
        vrid_instance("U2", "203.0.113.8", &unicast("192.0.2.1", "192.0.2.3")),
        vrid_instance(
            "N",
            "203.0.113.9",
            "    unicast_peer {\n        192.0.2.4\n    }\n",
        ),
    ]
    .concat();
    let errors = config::parse_str(&refused, "bad.conf")
        .unwrap_err()
        .to_string();
    let want = [
        "bad.conf:8: vrrp_instance M2: virtual_router_id 7 on eth0 (IPv4, multicast socket) is \
         already used by vrrp_instance M",
        "bad.conf:26: vrrp_instance U2: virtual_router_id 7 on eth0 (IPv4, unicast from \
         192.0.2.1) is already used by vrrp_instance U1",
        "bad.conf:37: vrrp_instance N: virtual_router_id 7 on eth0 (IPv4, multicast socket) is \
         already used by vrrp_instance M",
    ];
    for w in want {
        assert!(errors.contains(w), "missing {w:?} in:\n{errors}");
    }
    assert_eq!(errors.matches("already used").count(), 3, "{errors}");
}

/// keepalived's lexer end to end: braces anywhere, definitions, conditional lines.
#[test]
fn keepalived_syntax_braces_definitions_and_conditional_lines() {
    let text = "\
$IF=eth0
$PASS=\"secret1\"
@^no-such-host global_defs { router_id r1 }
vrrp_instance A { interface $IF
    virtual_router_id 51
    authentication { auth_type PASS
        auth_pass ${PASS} }
    virtual_ipaddress { 192.0.2.1/24 }
    @no-such-host priority 250
} vrrp_instance B
{
    interface ${IF} ! a comment
    virtual_router_id 52 # another
    virtual_ipaddress {
        198.51.100.1
    }
}
";
    let read = config::read_str(text, "k.conf", &config::LexOptions::default());
    let c = read.config.unwrap();
    assert!(read.warnings.is_empty(), "{}", read.warnings);
    assert_eq!(c.global.router_id.as_deref(), Some("r1"));
    let a = c.instance("A").unwrap();
    assert_eq!(
        (a.interface.as_str(), a.vrid, a.priority),
        ("eth0", 51, 100)
    );
    assert_eq!(a.auth_pass.as_ref().map(|p| p.expose()), Some("secret1"));
    // Held out of sight: neither the model's Debug nor what goes on the wire prints it.
    for shown in [format!("{c:?}"), format!("{:?}", a.auth())] {
        assert!(!shown.contains("secret1"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
    assert_eq!(a.vips[0].prefix_len, 24);
    let b = c.instance("B").unwrap();
    assert_eq!((b.interface.as_str(), b.vrid), ("eth0", 52));
    assert_eq!(b.location.line, 10);
}

/// The VRRP keywords keepalived documents that vrrpd reads with keepalived's meaning, and
/// what render writes of them reads back the same.
#[test]
fn keepalived_vrrp_keywords_with_their_meaning() {
    let text = "\
global_defs {
    vrrp_startup_delay 5.5
    vrrp_garp_interval 0.001
    vrrp_gna_interval 0.000001
    vrrp_lower_prio_no_advert
    dynamic_interfaces
    default_interface eth9
    vrrp_check_unicast_src
}
vrrp_instance A {
    interface eth0
    virtual_router_id 51
    accept
    track_src_ip
    mcast_src_ip 192.0.2.5
    virtual_ipaddress {
        192.0.2.1/24
    }
    virtual_ipaddress_excluded {
        2001:db8::1/64
        198.51.100.9 dev eth1
    }
}
";
    let c = config::parse_str(text, "k.conf").unwrap();
    assert_eq!(c.global.startup_delay_cs, 550);
    assert_eq!(
        (c.global.garp_interval_us, c.global.gna_interval_us),
        (1000, 1)
    );
    let a = c.instance("A").unwrap();
    assert!(a.lower_prio_no_advert);
    assert_eq!(a.vips.len(), 1);
    assert_eq!(a.vips_excluded.len(), 2);
    assert!(!a.is_ipv6(), "excluded VIPs do not set the family");
    assert_eq!(a.held().count(), 3);
    assert_eq!(a.vips_excluded[1].dev.as_deref(), Some("eth1"));
    let written = config::write::write(&c);
    let again = config::parse_str(&written, "w.conf").unwrap();
    assert_eq!(config::write::write(&again), written);
    assert_eq!(again.instances[0].vips_excluded, a.vips_excluded);
    assert_eq!(again.global, c.global);
}

/// What keepalived knows and vrrpd refuses says why, with its place; a word keepalived does
/// not know either stays an unknown keyword.
#[test]
fn refused_keepalived_keywords_say_why() {
    let text = "\
static_routes {
    192.0.2.0/24 via 198.51.100.1
}
vrrp_instance A {
    interface eth0
    virtual_router_id 51
    no_accept
    virtual_routes {
        192.0.2.0/24 via 198.51.100.1 or 198.51.100.2
    }
    promote_secondaries
    authentication {
        auth_type AH
    }
    virtual_ipaddress {
        192.0.2.1
    }
    no_such_keyword
}
";
    let read = config::read_str(text, "r.conf", &config::LexOptions::default());
    // Static routes are keepalived's to add at start whatever the VIPs do: set aside, with a
    // warning that says so.
    assert!(
        read.warnings
            .to_string()
            .starts_with("r.conf:1: ignored: keepalived would add these at start"),
        "{}",
        read.warnings
    );
    let errors = read.config.unwrap_err().to_string();
    assert!(!errors.contains("r.conf:1:"), "{errors}");
    let want = [
        "r.conf:7: `no_accept` is not supported by vrrpd: vrrpd installs no firewall rules",
        "r.conf:9: virtual_routes `192.0.2.0/24 via 198.51.100.1 or 198.51.100.2`: `or` is not \
         supported",
        "r.conf:11: `promote_secondaries` (keepalived's) is not supported by vrrpd (in \
         vrrp_instance A)",
        "r.conf:12: authentication: `auth_type AH` needs `auth_pass`",
        "r.conf:18: unknown keyword `no_such_keyword` in vrrp_instance A",
    ];
    for w in want {
        assert!(errors.contains(w), "missing {w:?} in:\n{errors}");
    }
}

/// LVS, SMTP, DBus, SNMP, scheduling: accepted, one warning each with its place, printed by
/// check-config (exit 0).
#[test]
fn what_is_not_vrrpds_job_is_accepted_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lvs.conf");
    std::fs::write(
        &file,
        "global_defs {\n    notification_email { root@example.com }\n    smtp_server 192.0.2.9\n    \
         enable_dbus\n    vrrp_no_swap\n    enable_snmp_vrrp\n}\nvrrp_instance A {\n    \
         interface eth0\n    virtual_router_id 1\n    smtp_alert\n    virtual_ipaddress {\n        \
         192.0.2.1\n    }\n}\nvirtual_server 192.0.2.1 80 {\n    real_server 192.0.2.2 80 {\n        \
         TCP_CHECK { connect_timeout 3 }\n    }\n}\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vrrpd"))
        .args(["check-config", "-f"])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains(": warning: ")).collect();
    let at: Vec<String> = warnings
        .iter()
        .map(|l| {
            l.split(": warning: ")
                .next()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        at,
        [
            "lvs.conf:2",
            "lvs.conf:3",
            "lvs.conf:4",
            "lvs.conf:5",
            "lvs.conf:6",
            "lvs.conf:11",
            "lvs.conf:16"
        ],
        "{err}"
    );
    assert!(
        err.contains(
            "lvs.conf:16: warning: ignored: keepalived would run these IPVS virtual servers and \
             their health checkers; LVS is not part of vrrpd (`virtual_server`)"
        ),
        "{err}"
    );
}

/// keepalived's `vrrp_track_process` with its defaults, an instance's `track_process`, and
/// render's text reading back the same.
#[test]
fn track_processes_with_keepalived_defaults() {
    let text = "\
vrrp_track_process haproxy {
    process haproxy
}
vrrp_track_process nginx {
    process /usr/sbin/nginx -g
    param_match partial
    weight -20
    quorum 2
    quorum_max 4
    delay 1.5
    terminate_delay 0.5
}
vrrp_instance A {
    interface eth0
    virtual_router_id 51
    virtual_ipaddress {
        192.0.2.1
    }
    track_process {
        haproxy
        nginx weight 10
    }
}
vrrp_instance B {
    interface eth0
    virtual_router_id 52
    virtual_ipaddress {
        192.0.2.2
    }
    track_process {
        ghost
    }
}
";
    // A name that is no block: keepalived warns and runs the instance without it; so does
    // vrrpd.
    let read = config::read_str(text, "p.conf", &config::LexOptions::default());
    assert_eq!(
        read.warnings.to_string(),
        "p.conf:24: vrrp_instance B: track_process `ghost` names no vrrp_track_process: \
         ignored, as keepalived does (the instance runs without that check)"
    );
    let c = read.config.unwrap();
    assert!(c.instance("B").unwrap().track_processes.is_empty());
    let text = text.replace("        ghost\n", "        haproxy\n");
    let c = config::parse_str(&text, "p.conf").unwrap();
    let haproxy = c.process("haproxy").unwrap();
    assert_eq!(haproxy.process, ["haproxy"]);
    assert_eq!(haproxy.param_match, config::ParamMatch::Any);
    assert!(!haproxy.full_command);
    assert_eq!(
        (haproxy.weight, haproxy.quorum, haproxy.quorum_max),
        (1, 1, u32::MAX)
    );
    let nginx = c.process("nginx").unwrap();
    assert!(nginx.full_command, "parameters compare the command line");
    assert_eq!(nginx.param_match, config::ParamMatch::Partial);
    assert_eq!((nginx.weight, nginx.quorum, nginx.quorum_max), (-20, 2, 4));
    assert_eq!((nginx.fork_delay_cs, nginx.terminate_delay_cs), (150, 50));
    let a = c.instance("A").unwrap();
    assert_eq!(a.track_processes[1].weight, Some(10));
    let written = config::write::write(&c);
    let again = config::parse_str(&written, "w.conf").unwrap();
    assert_eq!(again.processes, c.processes, "{written}");
    assert_eq!(again.instances[0].track_processes, a.track_processes);
}

/// Excluded VIPs are held but never advertised: the adverts an instance sends and expects
/// carry its VIPs only.
#[test]
fn excluded_vips_are_not_in_adverts() {
    let text = "vrrp_instance A {\n    interface eth0\n    virtual_router_id 51\n    \
                virtual_ipaddress {\n        192.0.2.1\n    }\n    \
                virtual_ipaddress_excluded {\n        192.0.2.2\n        2001:db8::2\n    }\n}\n";
    let c = config::parse_str(text, "x.conf").unwrap();
    let expect = vrrpd::daemon::rx::Expect::of(&c, &c.instances[0]);
    assert_eq!(
        expect.addresses,
        ["192.0.2.1".parse::<std::net::IpAddr>().unwrap()]
    );
    assert_eq!(
        vrrpd::daemon::setup::vip_keys(&c.instances[0]).len(),
        3,
        "all three held"
    );
}

/// keepalived's `track_file` (and its older name `vrrp_track_file`), an instance's
/// `track_file`, what is refused in them, and render's text reading back the same.
#[test]
fn track_files_with_keepalived_defaults() {
    let text = "\
track_file maintenance {
    file /run/maintenance
    init_file 0 overwrite
}
vrrp_track_file load {
    file \"/var/run/load weight\"
    weight -5
}
vrrp_instance A {
    interface eth0
    virtual_router_id 51
    virtual_ipaddress {
        192.0.2.1
    }
    track_file {
        maintenance weight 0
        load
    }
}
";
    let c = config::parse_str(text, "f.conf").unwrap();
    let m = c.file("maintenance").unwrap();
    assert_eq!((m.path.as_str(), m.weight), ("/run/maintenance", 1));
    assert_eq!(
        m.init,
        Some(config::FileInit {
            value: 0,
            overwrite: true
        })
    );
    assert_eq!(c.file("load").unwrap().path, "/var/run/load weight");
    let a = c.instance("A").unwrap();
    assert_eq!(a.track_files[0].weight, Some(0));
    assert_eq!(a.track_files[1].weight, None);
    let written = config::write::write(&c);
    let again = config::parse_str(&written, "w.conf").unwrap();
    assert_eq!(again.files, c.files, "{written}");
    assert_eq!(again.instances[0].track_files, a.track_files);

    let bad = text
        .replace(
            "        load\n",
            "        load weight 2 reverse\n        ghost\n",
        )
        .replace("    weight -5\n", "    weight -5 reverse\n");
    let errors = config::parse_str(&bad, "f.conf").unwrap_err().to_string();
    let want = [
        "f.conf:7: `weight` takes a number (`reverse` is not supported by vrrpd)",
        "f.conf:17: `load weight 2 reverse`: only `weight N` may follow the name (`reverse` is \
         not supported by vrrpd)",
    ];
    for w in want {
        assert!(errors.contains(w), "missing {w:?} in:\n{errors}");
    }
    let warnings = config::read_str(&bad, "f.conf", &config::LexOptions::default()).warnings;
    assert!(
        warnings.to_string().contains(
            "f.conf:9: vrrp_instance A: track_file `ghost` names no track_file block: ignored"
        ),
        "{warnings}"
    );
}

/// keepalived's `virtual_routes`, and render's text reading back the same.
#[test]
fn virtual_routes_read_and_written_back() {
    let text = "vrrp_instance A {\n    interface eth0\n    virtual_router_id 51\n    \
                virtual_ipaddress {\n        192.0.2.1\n    }\n    virtual_routes {\n        \
                src 192.0.2.1 to 198.51.100.0/24 via 192.0.2.254 dev eth1\n        \
                0.0.0.0/0 gw 192.0.2.254 table 100 metric 5\n        \
                unreachable 2001:db8:9::/48\n        203.0.113.0/24 dev eth0 scope host\n    }\n}\n";
    let c = config::parse_str(text, "r.conf").unwrap();
    let routes = &c.instances[0].virtual_routes;
    assert_eq!(routes.len(), 4);
    assert_eq!(routes[3].scope, Some(254));
    assert_eq!(routes[0].dev.as_deref(), Some("eth1"));
    assert_eq!(routes[1].table, Some(100));
    assert_eq!(routes[2].kind, config::RouteType::Unreachable);
    let written = config::write::write(&c);
    let again = config::parse_str(&written, "w.conf").unwrap();
    assert_eq!(&again.instances[0].virtual_routes, routes, "{written}");
}

/// keepalived's `-i`: `--config-id` says which `@ID` lines a file holds for this node.
#[test]
fn check_config_takes_keepalived_s_config_id() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ids.conf");
    std::fs::write(
        &file,
        "vrrp_instance A {\n    interface eth0\n    virtual_router_id 1\n    \
         @lb1 priority 150\n    @^lb1 priority 0\n    virtual_ipaddress {\n        \
         192.0.2.1\n    }\n}\n",
    )
    .unwrap();
    let run = |id: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_vrrpd"))
            .args(["check-config", "-i", id, "-f"])
            .arg(&file)
            .output()
            .unwrap()
    };
    assert_eq!(run("lb1").status.code(), Some(0));
    let other = run("lb2");
    assert_eq!(other.status.code(), Some(2));
    assert!(String::from_utf8(other.stderr)
        .unwrap()
        .contains("ids.conf:5: `priority 0`: must be a whole number from 1 to 255"));
}

/// The forms of [`keepalived_leniency_is_read_as_keepalived_reads_it`].
const LENIENT: &str = "global_defs {
    vrrp_garp_interval 0
}
vrrp_instance VI_1 {
    interface eth0
    state MASTER BACKUP
    virtual_router_id 51
    priority 120 50
    advert_int 1 2
    unicast_src_ip 192.0.2.1/24
    unicast_peer {
        192.0.2.2/24
    }
    authentication {
        auth_type PASS;
        auth_pass secret
    }
    virtual_ipaddress {
        192.0.2.10/24
    }
    track_script {
        chk_nothere
    }
}
";

/// What keepalived 2.2.7 reads without refusing it (it is silent or warns, `keepalived -t`
/// run on each form): vrrpd reads it as keepalived does, with a warning on the line that says
/// so.
#[test]
fn keepalived_leniency_is_read_as_keepalived_reads_it() {
    let text = LENIENT;
    let read = config::read_str(text, "k.conf", &config::LexOptions::default());
    let warnings = read.warnings.to_string();
    let c = read.config.unwrap();
    let i = c.instance("VI_1").unwrap();
    // The first value, the rest ignored.
    assert_eq!(i.state, Some(InitialState::Master));
    assert_eq!(i.priority, 120);
    assert_eq!(i.advert_int_cs, 100);
    // The address, its prefix length ignored.
    assert_eq!(i.unicast_src_ip, Some("192.0.2.1".parse().unwrap()));
    assert_eq!(
        i.unicast_peers,
        ["192.0.2.2".parse::<std::net::IpAddr>().unwrap()]
    );
    // `PASS;` is no type keepalived knows: no authentication at all, as keepalived runs it.
    assert!(i.auth_pass.is_none());
    assert!(i.track_scripts.is_empty());
    assert_eq!(c.global.garp_interval_us, 0);
    for (line, says) in [
        (
            2,
            "`vrrp_garp_interval 0`: keepalived reports 0 as outside its range",
        ),
        (
            6,
            "`state` takes one value: `MASTER` is read and `BACKUP` ignored",
        ),
        (
            8,
            "`priority` takes one value: `120` is read and `50` ignored",
        ),
        (
            9,
            "`advert_int` takes one value: `1` is read and `2` ignored",
        ),
        (
            10,
            "`unicast_src_ip`: `192.0.2.1/24` is read as the address 192.0.2.1",
        ),
        (
            12,
            "`unicast_peer`: `192.0.2.2/24` is read as the address 192.0.2.2",
        ),
        (
            15,
            "`auth_type PASS;`: keepalived reads the type as `PASS;`",
        ),
        (
            4,
            "vrrp_instance VI_1: track_script `chk_nothere` names no vrrp_script: ignored",
        ),
    ] {
        let want = format!("k.conf:{line}: {says}");
        assert!(
            warnings.lines().any(|w| w.starts_with(&want)),
            "missing {want:?} in:\n{warnings}"
        );
    }
    assert_eq!(warnings.lines().count(), 8, "{warnings}");
}

/// Forms keepalived refuses too (an invalid number, a prefix past the family's width).
#[test]
fn what_keepalived_refuses_stays_refused() {
    let bad = LENIENT
        .replace("virtual_router_id 51", "virtual_router_id 51;")
        .replace("192.0.2.1/24", "192.0.2.1/33");
    let errors = config::parse_str(&bad, "k.conf").unwrap_err().to_string();
    for want in [
        "k.conf:7: `virtual_router_id 51;`: must be a whole number from 1 to 255",
        "k.conf:10: `unicast_src_ip`: `192.0.2.1/33`: the prefix length must be 0 to 32",
    ] {
        assert!(errors.contains(want), "missing {want:?} in:\n{errors}");
    }
}

/// `notify_fifo`, `vrrp_notify_fifo` and their scripts (a quoted command, then a user and a
/// group), read and written back; a script without its FIFO is an error at its line.
#[test]
fn notify_fifos_read_and_written_back() {
    let text = "global_defs {
    notify_fifo /run/keepalived.fifo
    notify_fifo_script \"/usr/local/bin/reader --all\" nobody nogroup
    vrrp_notify_fifo /run/vrrp.fifo
}
vrrp_instance A {
    interface eth0
    virtual_router_id 51
    virtual_ipaddress {
        192.0.2.1
    }
}
";
    let c = config::parse_str(text, "f.conf").unwrap();
    let f = &c.global.notify_fifos;
    assert_eq!(f.len(), 2);
    assert_eq!(f[0].path, std::path::Path::new("/run/keepalived.fifo"));
    let (command, user) = f[0].script.as_ref().unwrap();
    assert_eq!(command.words, ["/usr/local/bin/reader", "--all"]);
    assert_eq!(user.as_ref().unwrap().group.as_deref(), Some("nogroup"));
    assert_eq!(f[1].keyword, "vrrp_notify_fifo");
    assert!(f[1].script.is_none());
    let written = config::write::write(&c);
    // Written on the same lines: read back as the same (places included).
    let again = config::parse_str(&written, "f.conf").unwrap();
    assert_eq!(
        again.global.notify_fifos, c.global.notify_fifos,
        "{written}"
    );

    let orphan = "global_defs {\n    vrrp_notify_fifo_script /bin/cat\n}\n";
    let errors = config::parse_str(orphan, "o.conf").unwrap_err().to_string();
    assert_eq!(
        errors,
        "o.conf:2: `vrrp_notify_fifo_script` needs `vrrp_notify_fifo` (the FIFO it reads)"
    );
}
