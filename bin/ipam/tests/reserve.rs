//! `ipam reserve`, `release`, `list`, `pool reserve` and `netconfig validate` through the real
//! binary on the file store: the fixtures' answers, the same answer again, never an address
//! twice, and bad input refused with the store left byte for byte as it was.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ipam");

fn seeds(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/seeds")
        .join(name)
        .display()
        .to_string()
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("CNI_COMMAND")
        .env_remove("IPAM_STORE")
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn reserve(netconfig: &str, ipset: &str, store: &str) -> (i32, String, String) {
    run(&[
        "reserve",
        "--netconfig",
        netconfig,
        "--ipset",
        ipset,
        "--store",
        store,
    ])
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Every file of a directory tree and its bytes, every link and its value (the lock file aside:
/// taking it is no change).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    if !dir.exists() {
        return out;
    }
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                todo.push(p);
            } else if meta.is_symlink() {
                let value = std::fs::read_link(&p).unwrap();
                out.insert(p, value.into_os_string().into_encoded_bytes());
            } else if p.file_name().unwrap() != "lock" {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn yaml(text: &str) -> serde_json::Value {
    serde_norway::from_str(text).unwrap()
}

/// A NetConfig with one IPv4 network whose range holds `range` addresses from 192.0.2.10.
fn small_netconfig(dir: &Path, last: &str) -> String {
    write(
        dir,
        "netconfig.yaml",
        &format!(
            "kind: NetConfig\nspec:\n  networks:\n  - name: A\n    subnets:\n    - name: s\n      cidr: 192.0.2.0/24\n      gateway: 192.0.2.1\n      allocationRanges:\n      - start: 192.0.2.10\n        end: {last}\n  - name: B\n    subnets:\n    - name: s\n      cidr: 198.51.100.0/24\n      allocationRanges:\n      - start: 198.51.100.10\n        end: 198.51.100.20\n"
        ),
    )
}

fn ipset_file(dir: &Path, name: &str, networks: &str) -> String {
    write(
        dir,
        &format!("{name}.yaml"),
        &format!("kind: IPSet\nmetadata:\n  name: {name}\nspec:\n  networks:\n{networks}"),
    )
}

#[test]
fn the_fixture_ipset_gets_the_recorded_reservations() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let netconfig = seeds("netconfig.yaml");
    let ipset = seeds("ipset-edpm-compute-0.yaml");
    let args = [
        "reserve",
        "--netconfig",
        &netconfig,
        "--ipset",
        &ipset,
        "--store",
        &store,
    ];
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");

    let recorded = std::fs::read_to_string(&ipset).unwrap();
    let mut expected = yaml(&recorded)["status"]["reservations"].clone();
    for r in expected.as_array_mut().unwrap() {
        match r["network"].as_str().unwrap() {
            // The fixture README: the status was captured against an older NetConfig; this
            // netconfig.yaml gives Tenant mtu 9000.
            "Tenant" => r["mtu"] = 9000.into(),
            // CtlPlane asks for defaultRoute: the issue wants it among the routes.
            "CtlPlane" => {
                r["routes"] =
                    serde_json::json!([{"destination": "0.0.0.0/0", "nexthop": "192.168.122.1"}])
            }
            _ => {}
        }
    }
    assert_eq!(yaml(&out)["reservations"], expected, "{out}");

    // The same IPSet again: the same answer, byte for byte; JSON says the same.
    assert_eq!(run(&args).1, out);
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let (code, json, _) = run(&json_args);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["reservations"], expected);

    let (_, list, _) = run(&["list", "--store", &store]);
    assert_eq!(list.lines().count(), 5, "{list}");
    assert!(list.contains("netconfig/InternalApi/subnet1\t172.17.0.150\tedpm-compute-0"));

    // Another node gets the next free addresses, and the fixed one is refused to it.
    let other = ipset_file(
        dir.path(),
        "edpm-compute-1",
        "  - name: CtlPlane\n    subnetName: subnet1\n  - name: InternalApi\n    subnetName: subnet1\n",
    );
    let (code, out, err) = reserve(&netconfig, &other, &store);
    assert_eq!(code, 0, "{err}");
    let got = yaml(&out);
    assert_eq!(got["reservations"][0]["address"], "192.168.122.101");
    // 172.17.0.10 and .12 are excluded.
    assert_eq!(got["reservations"][1]["address"], "172.17.0.11");

    let thief = ipset_file(
        dir.path(),
        "thief",
        "  - name: InternalApi\n    subnetName: subnet1\n    fixedIP: 172.17.0.150\n",
    );
    let before = snapshot(Path::new(&store));
    let (code, _, err) = reserve(&netconfig, &thief, &store);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("172.17.0.150 is already reserved for edpm-compute-0"),
        "{err}"
    );
    assert_eq!(snapshot(Path::new(&store)), before);

    // Release: every address of the IPSet goes; releasing again is no error.
    let (code, out, _) = run(&["release", "edpm-compute-0", "--store", &store]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 5, "{out}");
    let (code, _, err) = run(&["release", "edpm-compute-0", "--store", &store]);
    assert_eq!(code, 0);
    assert!(err.contains("held nothing"), "{err}");
    let (_, list, _) = run(&["list", "--store", &store]);
    assert_eq!(list.lines().count(), 2, "{list}");
    // The lowest free address comes back first.
    let (_, out, _) = reserve(&netconfig, &ipset, &store);
    assert!(out.contains("address: 192.168.122.100"), "{out}");
}

#[test]
fn an_ipset_is_all_or_nothing_and_follows_its_networks() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let netconfig = small_netconfig(dir.path(), "192.0.2.11");
    let both = "  - name: B\n    subnetName: s\n  - name: A\n    subnetName: s\n";
    for n in ["n0", "n1"] {
        let (code, _, err) = reserve(&netconfig, &ipset_file(dir.path(), n, both), &store);
        assert_eq!(code, 0, "{err}");
    }
    // A is full (two addresses): n2 gets nothing on B either.
    let before = snapshot(Path::new(&store));
    let (code, _, err) = reserve(&netconfig, &ipset_file(dir.path(), "n2", both), &store);
    assert_eq!(code, 1);
    assert!(
        err.contains("netconfig/A/s: no free address left in 192.0.2.10-192.0.2.11"),
        "{err}"
    );
    let (_, list, _) = run(&["list", "--store", &store, "--json"]);
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 4, "{list}");
    assert!(!list.to_string().contains("n2"));
    // (The search hint of B may have moved; no reservation did.)
    let after = snapshot(Path::new(&store));
    let records = |s: &BTreeMap<PathBuf, Vec<u8>>| {
        s.iter()
            .filter(|(p, _)| !p.ends_with("next"))
            .map(|(p, b)| (p.clone(), b.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(records(&after), records(&before));

    // n0 now asks for B only: its address on A is released, and n2 can have it.
    let b_only = "  - name: B\n    subnetName: s\n";
    let (code, out, _) = reserve(&netconfig, &ipset_file(dir.path(), "n0", b_only), &store);
    assert_eq!(code, 0);
    assert!(
        out.contains("198.51.100.10") && !out.contains("192.0.2."),
        "{out}"
    );
    let (code, out, err) = reserve(&netconfig, &ipset_file(dir.path(), "n2", both), &store);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("address: 192.0.2.10"), "{out}");
}

#[test]
#[allow(clippy::too_many_lines)] // one case per kind of bad input, each with its message
fn bad_input_is_refused_by_name_and_the_store_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let good = small_netconfig(dir.path(), "192.0.2.20");
    let first = ipset_file(dir.path(), "first", "  - name: A\n    subnetName: s\n");
    assert_eq!(reserve(&good, &first, &store).0, 0);
    let before = snapshot(Path::new(&store));

    let net = |body: &str| format!("kind: NetConfig\nspec:\n  networks:\n{body}");
    let cases: Vec<(&str, String, String, &str)> = vec![
        ("malformed YAML", "kind: NetConfig\nspec: [\n".into(), String::new(), "netconfig"),
        ("malformed JSON", "{\"kind\": \"NetConfig\", \"spec\": {\"networks\": [}}".into(), String::new(), ":1:"),
        ("an unknown key", net("  - name: A\n    subnets: []\n    colour: blue\n"), String::new(), "unknown field `colour`"),
        ("another API group", "apiVersion: metallb.io/v1beta1\nkind: NetConfig\nspec:\n  networks: []\n".into(), String::new(), "a NetConfig is network.openstack.org/VERSION"),
        (
            "a gateway outside the cidr",
            net("  - name: A\n    subnets:\n    - name: s\n      cidr: 192.0.2.0/24\n      gateway: 198.51.100.1\n      allocationRanges:\n      - {start: 192.0.2.10, end: 192.0.2.20}\n"),
            String::new(),
            "gateway 198.51.100.1 is outside 192.0.2.0/24",
        ),
        (
            "a range end outside the cidr",
            net("  - name: A\n    subnets:\n    - name: s\n      cidr: 192.0.2.0/24\n      allocationRanges:\n      - {start: 192.0.2.10, end: 192.0.3.20}\n"),
            String::new(),
            "allocationRanges[0] end 192.0.3.20 is outside 192.0.2.0/24",
        ),
        (
            "mixed families",
            net("  - name: A\n    subnets:\n    - name: s\n      cidr: 192.0.2.0/24\n      allocationRanges:\n      - {start: 192.0.2.10, end: 192.0.2.20}\n    - name: t\n      cidr: 2001:db8::/64\n      allocationRanges:\n      - {start: '2001:db8::10', end: '2001:db8::20'}\n"),
            String::new(),
            "mixes address families",
        ),
        (
            "overlapping cidrs",
            net("  - name: A\n    subnets:\n    - name: s\n      cidr: 192.0.2.0/24\n      allocationRanges:\n      - {start: 192.0.2.10, end: 192.0.2.20}\n  - name: B\n    subnets:\n    - name: s\n      cidr: 192.0.2.128/25\n      allocationRanges:\n      - {start: 192.0.2.130, end: 192.0.2.140}\n"),
            String::new(),
            "cidr 192.0.2.128/25 overlaps 192.0.2.0/24",
        ),
        (
            "overlapping ranges and start after end",
            net("  - name: A\n    subnets:\n    - name: s\n      cidr: 192.0.2.0/24\n      allocationRanges:\n      - {start: 192.0.2.10, end: 192.0.2.20}\n      - {start: 192.0.2.15, end: 192.0.2.30}\n      - {start: 192.0.2.50, end: 192.0.2.40}\n"),
            String::new(),
            "overlaps 192.0.2.10-192.0.2.20",
        ),
        ("an unknown network", std::fs::read_to_string(&good).unwrap(), "  - name: C\n    subnetName: s\n".into(), "the NetConfig has no network \"C\""),
        ("an unknown subnet", std::fs::read_to_string(&good).unwrap(), "  - name: A\n    subnetName: x\n".into(), "network A has no subnet \"x\""),
        ("a fixed address outside the cidr", std::fs::read_to_string(&good).unwrap(), "  - name: A\n    subnetName: s\n    fixedIP: 203.0.113.9\n".into(), "203.0.113.9 is outside 192.0.2.0/24"),
        ("a fixed gateway", std::fs::read_to_string(&good).unwrap(), "  - name: A\n    subnetName: s\n    fixedIP: 192.0.2.1\n".into(), "192.0.2.1 is the gateway"),
        ("a default route without a gateway", std::fs::read_to_string(&good).unwrap(), "  - name: B\n    subnetName: s\n    defaultRoute: true\n".into(), "defaultRoute needs a gateway"),
    ];
    for (what, netconfig, networks, expect) in cases {
        let nc = write(dir.path(), "bad-netconfig.yaml", &netconfig);
        let networks = if networks.is_empty() {
            "  - name: A\n    subnetName: s\n".to_owned()
        } else {
            networks
        };
        let is = ipset_file(dir.path(), "bad", &networks);
        let (code, out, err) = reserve(&nc, &is, &store);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(out.is_empty(), "{what}: {out}");
        assert!(err.contains(expect), "{what}: expected {expect:?} in {err}");
        assert!(
            err.contains("bad-netconfig.yaml") || err.contains("bad.yaml"),
            "{what}: names no file: {err}"
        );
        assert_eq!(
            snapshot(Path::new(&store)),
            before,
            "{what}: the store changed"
        );
    }

    // validate lists every problem, exit 1.
    let many = write(
        dir.path(),
        "many.yaml",
        &net("  - name: A\n    subnets:\n    - name: s\n      cidr: 192.0.2.0/24\n      gateway: 10.0.0.1\n      excludeAddresses: [192.0.3.1]\n      allocationRanges:\n      - {start: 192.0.2.30, end: 192.0.2.20}\n  - name: A\n    subnets: []\n"),
    );
    let (code, _, err) = run(&["netconfig", "validate", &many]);
    assert_eq!(code, 1);
    for p in [
        "gateway 10.0.0.1 is outside",
        "excludeAddresses 192.0.3.1 is outside",
        "start 192.0.2.30 is not before end 192.0.2.20",
        "network name \"A\" is used twice",
        "has no subnets",
    ] {
        assert!(err.contains(p), "{p:?} missing from {err}");
    }
    let (code, out, _) = run(&["netconfig", "validate", &seeds("netconfig.yaml")]);
    assert_eq!((code, out.contains("valid: 6 subnet(s)")), (0, true));

    // A store that is no store: exit 3, named, untouched.
    let record = Path::new(&store).join("pools/netconfig%2FA%2Fs/192.0.2.10");
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink("not json", &record).unwrap();
    // `first` holds that address: asking again reads the record.
    let (code, _, err) = reserve(&good, &first, &store);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("192.0.2.10") && err.contains("corrupt"),
        "{err}"
    );
    let (code, _, err) = run(&["list", "--store", &store]);
    assert_eq!(code, 3, "{err}");
    assert_eq!(std::fs::read_link(&record).unwrap(), Path::new("not json"));
    let (code, _, err) = run(&["list", "--store", "ftp://x"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn metallb_pools_hand_out_and_share_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let pool = seeds("metallb-ipaddresspool.yaml");
    let take = |name: &str, key: Option<&str>| {
        let mut args = vec![
            "pool", "reserve", "--pool", &pool, "--name", name, "--store", &store, "--json",
        ];
        if let Some(k) = key {
            args.extend(["--sharing-key", k]);
        }
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    assert_eq!(take("svc-a", None)["address"], "172.17.0.80");
    assert_eq!(take("svc-b", None)["address"], "172.17.0.81");
    let a = take("svc-a", None);
    assert_eq!(
        (a["address"].as_str(), a["new"].as_bool()),
        (Some("172.17.0.80"), Some(false))
    );
    let c = take("svc-c", Some("dns"));
    let d = take("svc-d", Some("dns"));
    assert_eq!(c["address"], "172.17.0.82");
    assert_eq!(d["address"], c["address"]);
    assert_eq!(d["sharingKey"], "dns");
    run(&["release", "svc-c", "--store", &store]);
    let (_, list, _) = run(&["list", "--store", &store]);
    assert!(
        list.contains("pool/internalapi\t172.17.0.82\tsvc-d"),
        "{list}"
    );
    // The pool holds 11 addresses: 8 more, then no more.
    for n in 0..8 {
        take(&format!("fill-{n}"), None);
    }
    let (code, _, err) = run(&[
        "pool",
        "reserve",
        "--pool",
        &pool,
        "--name",
        "one-too-many",
        "--store",
        &store,
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("no free address left in 172.17.0.80-172.17.0.90"),
        "{err}"
    );

    // avoidBuggyIPs: no .0 or .255; a CIDR entry covers its network and broadcast otherwise.
    let buggy = write(
        dir.path(),
        "buggy.yaml",
        "apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata:\n  name: buggy\nspec:\n  addresses: [198.51.100.0/31, 203.0.113.255/32]\n  avoidBuggyIPs: true\n",
    );
    let (_, out, err) = run(&[
        "pool", "reserve", "--pool", &buggy, "--name", "x", "--store", &store,
    ]);
    assert_eq!(out.trim(), "198.51.100.1", "{err}");
    let (code, _, _) = run(&[
        "pool", "reserve", "--pool", &buggy, "--name", "y", "--store", &store,
    ]);
    assert_eq!(code, 1);
    let bad = write(dir.path(), "bad-pool.yaml", "kind: IPAddressPool\nmetadata: {name: p}\nspec:\n  addresses: [192.0.2.1, 192.0.2.0/24, 192.0.2.5-192.0.2.9]\n");
    let (code, _, err) = run(&[
        "pool", "reserve", "--pool", &bad, "--name", "x", "--store", &store,
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("addresses[0]") && err.contains("neither a CIDR nor a range"),
        "{err}"
    );
    assert!(
        err.contains("addresses[2]: 192.0.2.5-192.0.2.9 overlaps 192.0.2.0-192.0.2.255"),
        "{err}"
    );
}

#[test]
fn vip_suggest_avoids_reserved_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let cluster = ipi_lab::install_config(dir.path(), &["192.0.2.0/24"], &[], &[]);
    let pool = write(
        dir.path(),
        "p.yaml",
        "kind: IPAddressPool\nmetadata: {name: p}\nspec:\n  addresses: [192.0.2.5-192.0.2.5]\n",
    );
    assert_eq!(
        run(&["pool", "reserve", "--pool", &pool, "--name", "x", "--store", &store]).0,
        0
    );
    let (code, out, err) = run(&[
        "vip",
        "suggest",
        "--cluster",
        cluster.to_str().unwrap(),
        "--store",
        &store,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "apiVIPs:\n- 192.0.2.6\ningressVIPs:\n- 192.0.2.7\n");
}

#[test]
fn a_usage_error_names_what_is_missing() {
    let (code, out, err) = run(&["reserve", "--netconfig", "x"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("--ipset"), "{err}");
}

#[test]
fn a_failed_ipset_gives_back_even_a_moved_address() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let netconfig = write(
        dir.path(),
        "nc.yaml",
        "kind: NetConfig\nspec:\n  networks:\n  - name: A\n    subnets:\n    - name: s\n      cidr: 192.0.2.0/24\n      allocationRanges:\n      - {start: 192.0.2.10, end: 192.0.2.20}\n  - name: B\n    subnets:\n    - name: s\n      cidr: 198.51.100.0/24\n      allocationRanges:\n      - {start: 198.51.100.10, end: 198.51.100.11}\n",
    );
    let a_only = "  - name: A\n    subnetName: s\n";
    let (code, _, err) = reserve(&netconfig, &ipset_file(dir.path(), "n0", a_only), &store);
    assert_eq!(code, 0, "{err}");
    let b_only = "  - name: B\n    subnetName: s\n";
    for other in ["other", "another"] {
        let (code, _, err) = reserve(&netconfig, &ipset_file(dir.path(), other, b_only), &store);
        assert_eq!(code, 0, "{err}");
    }
    let before = snapshot(Path::new(&store));

    // n0 moves to a fixed address on A and asks for B, which is full: nothing changes, and
    // n0 still holds its old address.
    let moved =
        "  - name: A\n    subnetName: s\n    fixedIP: 192.0.2.15\n  - name: B\n    subnetName: s\n";
    let (code, _, err) = reserve(&netconfig, &ipset_file(dir.path(), "n0", moved), &store);
    assert_eq!(code, 1);
    assert!(
        err.contains("no free address left in 198.51.100.10-198.51.100.11"),
        "{err}"
    );
    let (_, list, _) = run(&["list", "--store", &store]);
    assert!(list.contains("netconfig/A/s\t192.0.2.10\tn0"), "{list}");
    assert!(!list.contains("192.0.2.15"), "{list}");
    let records = |s: BTreeMap<PathBuf, Vec<u8>>| {
        s.into_iter()
            .filter(|(p, _)| !p.ends_with("next"))
            .collect::<Vec<_>>()
    };
    assert_eq!(records(snapshot(Path::new(&store))), records(before));
}

#[test]
fn a_held_address_the_netconfig_now_excludes_moves() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let netconfig = small_netconfig(dir.path(), "192.0.2.20");
    let set = ipset_file(dir.path(), "n0", "  - name: A\n    subnetName: s\n");
    let (_, out, _) = reserve(&netconfig, &set, &store);
    assert!(out.contains("address: 192.0.2.10"), "{out}");
    // The operator excludes 192.0.2.10 now: the same IPSet moves to the lowest allowed address.
    let text = std::fs::read_to_string(&netconfig).unwrap().replace(
        "      gateway: 192.0.2.1\n",
        "      gateway: 192.0.2.1\n      excludeAddresses: [192.0.2.10]\n",
    );
    let excluded = write(dir.path(), "excluded.yaml", &text);
    let (code, out, err) = reserve(&excluded, &set, &store);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("address: 192.0.2.11"), "{out}");
    let (_, list, _) = run(&["list", "--store", &store]);
    assert_eq!(list, "netconfig/A/s\t192.0.2.11\tn0\n");
}

#[test]
fn reading_a_store_that_is_not_there_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("no-such-store").display().to_string();
    let cluster = ipi_lab::install_config(dir.path(), &["192.0.2.0/24"], &[], &[]);
    for args in [
        vec!["list", "--store", &typo],
        vec!["list", "--store", &typo, "--json"],
        vec!["release", "x", "--store", &typo],
        vec![
            "vip",
            "suggest",
            "--cluster",
            cluster.to_str().unwrap(),
            "--store",
            &typo,
        ],
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!Path::new(&typo).exists(), "{args:?} created {typo}");
    }
    assert_eq!(run(&["list", "--store", &typo, "--json"]).1, "[]\n");
}
