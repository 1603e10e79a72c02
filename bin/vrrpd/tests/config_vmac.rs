//! keepalived's `use_vmac [NAME]` and `vmac_xmit_base` read as keepalived 2.2.7 reads them:
//! the names (written or keepalived's defaults), where the VIPs and the adverts go, and every
//! refusal naming its line.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use vrrpd::config::{self, LexOptions};

/// An IPv4 instance `name` on `interface` with VRID `vrid` and the lines `extra`.
fn v4(name: &str, interface: &str, vrid: u8, extra: &str) -> String {
    format!(
        "vrrp_instance {name} {{\n    interface {interface}\n    virtual_router_id {vrid}\n{extra}    \
         virtual_ipaddress {{\n        192.0.2.{vrid}/24\n        198.51.100.{vrid}/32 dev eth9\n    }}\n}}\n"
    )
}

/// An IPv6 instance.
fn v6(name: &str, interface: &str, vrid: u8, extra: &str) -> String {
    format!(
        "vrrp_instance {name} {{\n    interface {interface}\n    virtual_router_id {vrid}\n{extra}    \
         virtual_ipaddress {{\n        2001:db8::{vrid}/64\n    }}\n}}\n"
    )
}

fn read(text: &str) -> config::Read {
    config::read_str(text, "k.conf", &LexOptions::default())
}

/// The errors of `text` as `file:line: message`.
fn errors(text: &str) -> Vec<String> {
    match read(text).config {
        Ok(_) => Vec::new(),
        Err(e) => e.0.iter().map(|(at, m)| format!("{at}: {m}")).collect(),
    }
}

fn names(text: &str) -> Vec<Option<(String, bool)>> {
    let c = read(text).config.unwrap();
    c.instances
        .iter()
        .map(|i| i.vmac.as_ref().map(|m| (m.name.clone(), m.xmit_base)))
        .collect()
}

#[test]
fn the_default_name_is_vrrp_dot_vrid_and_the_vips_go_on_it() {
    let c = read(&v4("VI_1", "eth0", 51, "    use_vmac\n"))
        .config
        .unwrap();
    let i = &c.instances[0];
    let m = i.vmac.as_ref().unwrap();
    assert_eq!((m.name.as_str(), m.xmit_base), ("vrrp.51", false));
    assert_eq!(m.location.to_string(), "k.conf:4");
    assert_eq!(i.vip_interface(&i.vips[0]), "vrrp.51");
    // A VIP with its own `dev` stays there (keepalived's use_vmac_addr is another keyword).
    assert_eq!(i.vip_interface(&i.vips[1]), "eth9");
    assert_eq!(i.send_interface(), "vrrp.51");
    assert_eq!(
        config::Vmac::mac(51, false),
        [0x00, 0x00, 0x5e, 0x00, 0x01, 51]
    );
    assert_eq!(
        config::Vmac::mac(51, true),
        [0x00, 0x00, 0x5e, 0x00, 0x02, 51]
    );
}

#[test]
fn a_written_name_and_vmac_xmit_base_in_either_order() {
    let text = v4(
        "VI_1",
        "eth0",
        51,
        "    vmac_xmit_base\n    use_vmac vip51\n",
    );
    assert_eq!(names(&text), [Some(("vip51".to_string(), true))]);
    let c = read(&text).config.unwrap();
    let i = &c.instances[0];
    assert_eq!(
        (i.vip_interface(&i.vips[0]), i.send_interface()),
        ("vip51", "eth0")
    );
    let without = v4("VI_1", "eth0", 51, "");
    assert_eq!(names(&without), [None]);
    let c = read(&without).config.unwrap();
    let i = &c.instances[0];
    assert_eq!(
        (i.vip_interface(&i.vips[0]), i.send_interface()),
        ("eth0", "eth0")
    );
}

#[test]
fn defaults_skip_names_in_use_as_keepalived_create_vmac_name_does() {
    // The same VRID on three interfaces: keepalived's vrrp.51, vrrp1.51, vrrp2.51; a written
    // name is skipped by every default, wherever it is written.
    let text = [
        v4("A", "eth0", 51, "    use_vmac\n"),
        v4("B", "eth1", 51, "    use_vmac\n"),
        v4("D", "eth4", 51, "    use_vmac\n"),
        v4("E", "eth2", 52, "    use_vmac vrrp.53\n"),
        v4("F", "eth3", 53, "    use_vmac\n"),
    ]
    .concat();
    let got: Vec<String> = names(&text).into_iter().map(|n| n.unwrap().0).collect();
    assert_eq!(
        got,
        ["vrrp.51", "vrrp1.51", "vrrp2.51", "vrrp.53", "vrrp1.53"]
    );
}

#[test]
fn an_ipv6_instance_tries_vrrp6_second() {
    let text = [
        v4("A", "eth0", 51, "    use_vmac\n"),
        v6("C", "eth0", 51, "    use_vmac\n"),
        v6("D", "eth1", 51, "    use_vmac\n"),
    ]
    .concat();
    let got: Vec<String> = names(&text).into_iter().map(|n| n.unwrap().0).collect();
    assert_eq!(got, ["vrrp.51", "vrrp6.51", "vrrp1.51"]);
}

#[test]
fn unicast_with_use_vmac_sends_from_the_interface_with_keepalived_s_warning() {
    let text = v4(
        "VI_1",
        "eth0",
        51,
        "    use_vmac\n    unicast_peer {\n        192.0.2.9\n    }\n",
    );
    let r = read(&text);
    let c = r.config.unwrap();
    assert!(c.instances[0].vmac.as_ref().unwrap().xmit_base);
    let warnings: Vec<String> = r
        .warnings
        .0
        .iter()
        .map(|(at, m)| format!("{at}: {m}"))
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("k.conf:4: ") && w.contains("needs `vmac_xmit_base`")),
        "{warnings:?}"
    );
}

#[test]
fn every_refusal_names_its_line() {
    let cases = [
        (
            v4("VI_1", "eth0", 51, "    vmac_xmit_base\n"),
            "k.conf:4: vrrp_instance VI_1: `vmac_xmit_base` is only valid with `use_vmac`",
        ),
        (
            v4("VI_1", "eth0", 51, "    use_vmac 00:11:22:33:44:55\n"),
            "k.conf:4: `use_vmac 00:11:22:33:44:55`: a MAC address of your own is not supported",
        ),
        (
            v4("VI_1", "eth0", 51, "    use_vmac a_name_far_too_long\n"),
            "k.conf:4: `use_vmac a_name_far_too_long`: not an interface name",
        ),
        (
            v4("VI_1", "eth0", 51, "    use_vmac ..\n"),
            "k.conf:4: `use_vmac ..`: not an interface name",
        ),
        (
            v4("VI_1", "eth0", 51, "    use_vmac one two\n"),
            "k.conf:4: `use_vmac one two`: takes one interface name at most",
        ),
        (
            v4("VI_1", "eth0", 51, "    use_vmac\n    use_vmac v\n"),
            "k.conf:5: `use_vmac` is already given in this instance at k.conf:4",
        ),
        // The instance's own interface, which exists and is no macvlan of ours: keepalived
        // ignores the name ("already exists and is not a private macvlan").
        (
            v4("VI_1", "eth0", 51, "    use_vmac eth0\n"),
            "k.conf:4: vrrp_instance VI_1: `use_vmac eth0`: vrrp_instance VI_1 runs on that \
             interface",
        ),
        (
            [
                v4("VI_1", "eth0", 51, "    use_vmac v51\n"),
                v4("VI_2", "eth0", 52, "    use_vmac v51\n"),
            ]
            .concat(),
            "k.conf:13: vrrp_instance VI_2: `use_vmac v51`: vrrp_instance VI_1 already uses it",
        ),
        (
            [
                v4("VI_1", "eth0", 51, "    use_vmac\n"),
                v4("VI_2", "vrrp.51", 52, ""),
            ]
            .concat(),
            "",
        ),
    ];
    for (text, want) in &cases[..cases.len() - 1] {
        let got = errors(text);
        assert!(
            got.iter().any(|e| e.starts_with(want)),
            "want {want:?}, got {got:?}\n{text}"
        );
    }
    // An instance running on the name the default would take: the default moves on, as
    // keepalived's does past an existing interface.
    let (text, _) = &cases[cases.len() - 1];
    assert_eq!(names(text)[0], Some(("vrrp1.51".to_string(), false)));
}

#[test]
fn an_instance_on_another_instance_s_macvlan_is_refused_too() {
    // keepalived looks up `interface vip51`, finds the macvlan of VI_1 (once made) and runs
    // VI_2 there; vrrpd refuses the name where it is written, before anything is made.
    let text = [
        v4("VI_1", "eth0", 51, "    use_vmac vip51\n"),
        v4("VI_2", "vip51", 52, ""),
    ]
    .concat();
    let got = errors(&text);
    assert!(
        got.iter().any(|e| e.starts_with(
            "k.conf:4: vrrp_instance VI_1: `use_vmac vip51`: vrrp_instance VI_2 runs on that"
        )),
        "{got:?}"
    );
}

#[test]
fn render_writes_the_name_and_reads_back_the_same() {
    let text = [
        v4("VI_1", "eth0", 51, "    use_vmac\n"),
        v4("VI_2", "eth0", 52, "    use_vmac v52\n    vmac_xmit_base\n"),
    ]
    .concat();
    let c = read(&text).config.unwrap();
    let out = config::write::write(&c);
    assert!(out.contains("    use_vmac vrrp.51\n"), "{out}");
    assert!(
        out.contains("    use_vmac v52\n    vmac_xmit_base\n"),
        "{out}"
    );
    let back = read(&out).config.unwrap();
    let vmacs = |c: &config::Config| -> Vec<_> {
        c.instances
            .iter()
            .map(|i| i.vmac.as_ref().map(|m| (m.name.clone(), m.xmit_base)))
            .collect()
    };
    assert_eq!(vmacs(&back), vmacs(&c));
}
