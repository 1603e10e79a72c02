//! `--probe IF` on the wire: in a lab, a host holds one of the VIPs (or pool addresses) as a
//! plain address, and `ipam vip validate --probe` names it and its MAC, `vip suggest --probe`,
//! `reserve --probe` and `pool reserve --probe` pass it over (the pool marks it in the store until it is
//! released by hand); with the address gone, all pass. IPv4 and IPv6. The probes themselves
//! are read back with tshark: ARP requests from 0.0.0.0 for the VIP, neighbour solicitations
//! from :: to its solicited-node group.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use ipi_lab::{Host, Lab, Output};

const BIN: &str = env!("CARGO_BIN_EXE_ipam");

fn ipam(host: &Host, args: &[&str]) -> Output {
    host.run(BIN, args).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn lab_ready() -> bool {
    ipi_lab::available() && ipi_lab::tool("tshark", "tshark") && ipi_lab::tool("tcpdump", "tcpdump")
}

/// The lab, the host that probes, the host that holds `held` as plain addresses, its MAC.
fn setup(held: &[&str]) -> (Lab, Host, Host, String) {
    let mut lab = Lab::new().unwrap();
    let (prober, holder) = (lab.host("prober").unwrap(), lab.host("holder").unwrap());
    for address in held {
        let prefix = if address.contains(':') { "/64" } else { "/24" };
        let out = holder
            .run(
                "ip",
                [
                    "addr",
                    "add",
                    &format!("{address}{prefix}"),
                    "dev",
                    "eth0",
                    "nodad",
                ],
            )
            .unwrap();
        assert!(out.success, "{}", out.stderr);
    }
    let mac = holder.mac().unwrap();
    (lab, prober, holder, mac)
}

fn release(holder: &Host, address: &str) {
    let prefix = if address.contains(':') { "/64" } else { "/24" };
    let out = holder
        .run(
            "ip",
            ["addr", "del", &format!("{address}{prefix}"), "dev", "eth0"],
        )
        .unwrap();
    assert!(out.success, "{}", out.stderr);
}

#[test]
fn vip_validate_names_a_vip_in_use_and_its_mac_then_passes_once_it_is_gone() {
    if !lab_ready() {
        return;
    }
    let (lab, prober, holder, mac) = setup(&["192.0.2.5", "2001:db8::7"]);
    let cluster = ipi_lab::install_config(
        lab.dir(),
        &["192.0.2.0/24", "2001:db8::/64"],
        &["192.0.2.5", "2001:db8::5"],
        &["192.0.2.7", "2001:db8::7"],
    );
    let cluster = cluster.display().to_string();
    let capture = prober.capture("probes", "arp or icmp6").unwrap();
    let out = ipam(
        &prober,
        &["vip", "validate", "--cluster", &cluster, "--probe", "eth0"],
    );
    let pcap = capture.stop().unwrap();
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    let expected = [
        format!(
            r#"platform.baremetal.apiVIPs[0]: Invalid value: "192.0.2.5": IP address already in use: answered on eth0 by {mac}"#
        ),
        format!(
            r#"platform.baremetal.ingressVIPs[1]: Invalid value: "2001:db8::7": IP address already in use: answered on eth0 by {mac}"#
        ),
    ];
    for line in &expected {
        assert!(out.stderr.contains(line), "{line}\nnot in:\n{}", out.stderr);
    }
    assert!(
        !out.stderr.contains("\"192.0.2.7\"") && !out.stderr.contains("\"2001:db8::5\""),
        "{}",
        out.stderr
    );
    // Without --probe the same file is valid: the wire is the only problem.
    let plain = ipam(&prober, &["vip", "validate", "--cluster", &cluster]);
    assert_eq!(plain.code, Some(0), "{}", plain.stderr);
    probes_on_the_wire(&pcap, prober.ipv4().to_string());

    release(&holder, "192.0.2.5");
    release(&holder, "2001:db8::7");
    let out = ipam(
        &prober,
        &["vip", "validate", "--cluster", &cluster, "--probe", "eth0"],
    );
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
}

/// What tshark reads in the capture: each probe an ARP request from 0.0.0.0 for a VIP (never
/// from the prober's own address `own`), each solicitation from :: to the VIP's
/// solicited-node group.
fn probes_on_the_wire(pcap: &Path, own: String) {
    let fields = |filter: &str, fields: &[&str]| ipi_lab::tshark_fields(pcap, filter, fields);
    let arp = fields(
        "arp.opcode == 1",
        &["arp.src.proto_ipv4", "arp.dst.proto_ipv4", "arp.dst.hw_mac"],
    );
    // An answered address is probed no more (RFC 5227 2.1.1: the host "MUST NOT" go on); a
    // free one gets all PROBE_NUM probes.
    for (vip, probes) in [("192.0.2.5", 1..=1), ("192.0.2.7", 3..=3)] {
        let ours: Vec<_> = arp.iter().filter(|r| r[1] == vip).collect();
        assert!(
            probes.contains(&ours.len()),
            "ARP probes for {vip}: {arp:?}"
        );
        for r in ours {
            assert_eq!(r[0], "0.0.0.0", "an ARP probe comes from no address: {r:?}");
            assert_eq!(
                r[2], "00:00:00:00:00:00",
                "target hardware address zero: {r:?}"
            );
        }
    }
    assert!(arp.iter().all(|r| r[0] != own), "{arp:?}");
    let ns = fields(
        "icmpv6.type == 135",
        &[
            "ipv6.src",
            "ipv6.dst",
            "icmpv6.nd.ns.target_address",
            "ipv6.hlim",
        ],
    );
    for (vip, group, probes) in [
        ("2001:db8::5", "ff02::1:ff00:5", 3..=3),
        ("2001:db8::7", "ff02::1:ff00:7", 1..=1),
    ] {
        let ours: Vec<_> = ns.iter().filter(|r| r[2] == vip).collect();
        assert!(
            probes.contains(&ours.len()),
            "DAD solicitations for {vip}: {ns:?}"
        );
        for r in ours {
            assert_eq!(
                (r[0].as_str(), r[1].as_str(), r[3].as_str()),
                ("::", group, "255"),
                "{r:?}"
            );
        }
    }
}

#[test]
fn vip_suggest_passes_over_an_answered_address() {
    if !lab_ready() {
        return;
    }
    let (lab, prober, holder, _) = setup(&["192.0.2.5", "2001:db8::5"]);
    let cluster = ipi_lab::install_config(lab.dir(), &["192.0.2.0/24", "2001:db8::/64"], &[], &[]);
    let cluster = cluster.display().to_string();
    let suggest = || {
        ipam(
            &prober,
            &[
                "vip",
                "suggest",
                "--cluster",
                &cluster,
                "--probe",
                "eth0",
                "--json",
            ],
        )
    };
    let out = suggest();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "{\"apiVIPs\": [\"192.0.2.6\", \"2001:db8::6\"], \"ingressVIPs\": [\"192.0.2.7\", \"2001:db8::7\"]}\n"
    );
    assert!(
        out.stderr
            .contains("192.0.2.5 is in use on eth0: answered by"),
        "{}",
        out.stderr
    );
    release(&holder, "192.0.2.5");
    release(&holder, "2001:db8::5");
    let out = suggest();
    assert_eq!(
        out.stdout,
        "{\"apiVIPs\": [\"192.0.2.5\", \"2001:db8::5\"], \"ingressVIPs\": [\"192.0.2.7\", \"2001:db8::7\"]}\n",
        "{}",
        out.stderr
    );
}

#[test]
fn pool_reserve_skips_and_marks_an_answered_address_until_released_by_hand() {
    if !lab_ready() {
        return;
    }
    let (lab, prober, holder, mac) = setup(&["192.0.2.5", "2001:db8::11"]);
    let pool = |name: &str, range: &str| {
        write(
            lab.dir(),
            name,
            &format!("apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata:\n  name: {name}\nspec:\n  addresses:\n  - {range}\n"),
        )
    };
    let v4 = pool("lb4", "192.0.2.5-192.0.2.9");
    let v6 = pool("lb6", "2001:db8::11-2001:db8::15");
    let store = lab.dir().join("store").display().to_string();
    let reserve = |pool: &str, name: &str| {
        let out = ipam(
            &prober,
            &[
                "pool", "reserve", "--pool", pool, "--name", name, "--store", &store, "--probe",
                "eth0",
            ],
        );
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        out
    };
    let first = reserve(&v4, "svc-a");
    assert_eq!(first.stdout, "192.0.2.6\n", "{}", first.stderr);
    assert!(
        first
            .stderr
            .contains(&format!("192.0.2.5 is in use on eth0: answered by {mac}")),
        "{}",
        first.stderr
    );
    assert_eq!(reserve(&v6, "svc-a").stdout, "2001:db8::12\n");
    // Marked in the store, and not offered again, even with the holder gone.
    let list = ipam(&prober, &["list", "--store", &store]);
    assert!(
        list.stdout
            .contains("pool/lb4\t192.0.2.5\tanswered/192.0.2.5"),
        "{}",
        list.stdout
    );
    assert!(
        list.stdout.contains("answered/2001:db8::11"),
        "{}",
        list.stdout
    );
    release(&holder, "192.0.2.5");
    assert_eq!(reserve(&v4, "svc-b").stdout, "192.0.2.7\n");
    // The same request again is the same answer, and is not probed (its holder answers).
    assert_eq!(reserve(&v4, "svc-a").stdout, "192.0.2.6\n");
    // Released by hand, the address is offered again, and now nothing answers.
    let out = ipam(
        &prober,
        &["release", "answered/192.0.2.5", "--store", &store],
    );
    assert!(
        out.success && out.stdout.contains("released 192.0.2.5"),
        "{}{}",
        out.stdout,
        out.stderr
    );
    let again = reserve(&v4, "svc-c");
    assert_eq!(again.stdout, "192.0.2.5\n", "{}", again.stderr);
    assert!(again.stderr.is_empty(), "{}", again.stderr);
}

#[test]
fn reserve_skips_an_answered_address_on_every_network_of_an_ipset() {
    if !lab_ready() {
        return;
    }
    let (lab, prober, _holder, mac) = setup(&["192.0.2.10", "2001:db8::10"]);
    let netconfig = write(
        lab.dir(),
        "netconfig.yaml",
        "kind: NetConfig\nspec:\n  networks:\n  - name: A\n    subnets:\n    - name: s\n      \
         cidr: 192.0.2.0/24\n      allocationRanges:\n      - start: 192.0.2.10\n        \
         end: 192.0.2.20\n  - name: B\n    subnets:\n    - name: s\n      cidr: 2001:db8::/64\n      \
         allocationRanges:\n      - start: 2001:db8::10\n        end: 2001:db8::20\n",
    );
    let ipset = |name: &str| {
        write(
            lab.dir(),
            &format!("{name}.yaml"),
            &format!(
                "kind: IPSet\nmetadata:\n  name: {name}\nspec:\n  networks:\n  - name: A\n    \
                 subnetName: s\n  - name: B\n    subnetName: s\n"
            ),
        )
    };
    let store = lab.dir().join("store").display().to_string();
    let reserve = |name: &str| {
        let file = ipset(name);
        let args = [
            "reserve",
            "--netconfig",
            &netconfig,
            "--ipset",
            &file,
            "--store",
            &store,
            "--json",
            "--probe",
            "eth0",
        ];
        let out = ipam(&prober, &args);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        out
    };
    let first = reserve("node-0");
    let addresses: Vec<String> = serde_json::from_str::<serde_json::Value>(&first.stdout).unwrap()
        ["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["address"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        addresses,
        ["192.0.2.11", "2001:db8::11"],
        "{}",
        first.stdout
    );
    for held in ["192.0.2.10", "2001:db8::10"] {
        let said = format!("{held} is in use on eth0: answered by {mac}");
        assert!(first.stderr.contains(&said), "{}", first.stderr);
    }
    let list = ipam(&prober, &["list", "--store", &store]).stdout;
    assert!(
        list.contains("answered/192.0.2.10") && list.contains("answered/2001:db8::10"),
        "{list}"
    );
    // The same IPSet again: the same answer, no probe (its own holder would answer).
    let again = reserve("node-0");
    assert_eq!(again.stdout, first.stdout);
    assert!(again.stderr.is_empty(), "{}", again.stderr);
}
