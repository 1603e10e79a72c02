//! ipam as a CNI IPAM plugin: the real binary, called as a runtime calls it (environment and
//! stdin), against a store in a temporary directory; and beside Debian's host-local plugin,
//! the same configs and container ids through both.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::cni_addresses as addresses;
use ipnetwork::IpNetwork;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_ipam");
const HOST_LOCAL: &str = "/usr/lib/cni/host-local";
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/seeds/nad-internalapi-whereabouts.json"
);

/// What one plugin run printed.
#[derive(Debug)]
struct Out {
    ok: bool,
    stdout: String,
}

impl Out {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.stdout))
    }

    /// The error code, checking the error object's shape.
    fn code(&self) -> u64 {
        assert!(!self.ok, "succeeded: {}", self.stdout);
        let v = self.json();
        assert!(v["msg"].is_string(), "{v}");
        v["code"].as_u64().unwrap()
    }

    fn success(&self) -> &Self {
        assert!(self.ok, "failed: {}", self.stdout);
        self
    }
}

/// Runs `plugin` with the usual environment for `command` on container `ctr` (eth0), with
/// `changes` applied to it (a `None` value removes the variable).
fn run_with(
    plugin: &str,
    command: &str,
    conf: &str,
    ctr: &str,
    changes: &[(&str, Option<&str>)],
) -> Out {
    let mut cmd = Command::new(plugin);
    cmd.env_clear()
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", ctr)
        .env("CNI_IFNAME", "eth0")
        .env("CNI_NETNS", "/proc/self/ns/net")
        .env("CNI_PATH", "/usr/lib/cni");
    for (k, v) in changes {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = common::finish(&mut cmd, conf.as_bytes());
    assert!(
        matches!(out.code, Some(0 | 1)),
        "{plugin} {command}: exit {:?}",
        out.code
    );
    Out {
        ok: out.ok,
        stdout: out.stdout,
    }
}

fn run(command: &str, conf: &str, ctr: &str) -> Out {
    run_with(BIN, command, conf, ctr, &[])
}

/// Changes to the environment: a `None` value removes the variable.
type Env<'a> = Vec<(&'a str, Option<&'a str>)>;

/// Every file, link and directory under `dir`, with the files' contents and the links' targets.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            let kind = std::fs::symlink_metadata(&p).unwrap().file_type();
            let content = if kind.is_dir() {
                todo.push(p.clone());
                None
            } else if kind.is_symlink() {
                // The file store keeps values as symbolic links.
                Some(
                    std::fs::read_link(&p)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                )
            } else {
                Some(std::fs::read(&p).unwrap())
            };
            out.insert(p, content);
        }
    }
    out
}

/// A config of `version` named `name` with this ipam section, storing in `store`.
fn conf(version: &str, name: &str, store: &Path, mut ipam: Value) -> String {
    ipam["store"] = json!(store);
    json!({"cniVersion": version, "name": name, "type": "bridge", "bridge": "br0", "ipam": ipam})
        .to_string()
}

/// What `ipam list --json` prints for the store in `dir`.
fn ipam_list_json(dir: &Path) -> String {
    let out = Command::new(BIN)
        .args(["list", "--json", "--store"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn version_lists_every_supported_version() {
    let out = run_with(BIN, "VERSION", "", "", &[("CNI_CONTAINERID", None)]);
    let v = out.success().json();
    assert_eq!(
        v["supportedVersions"],
        json!(["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"])
    );
    assert_eq!(v["cniVersion"], "1.1.0");
}

#[test]
fn the_whereabouts_fixture_works_as_is() {
    let dir = tempfile::tempdir().unwrap();
    let mut fixture: Value = serde_json::from_slice(&std::fs::read(FIXTURE).unwrap()).unwrap();
    // The one thing a test must change: where the store is.
    fixture["ipam"]["store"] = json!(dir.path());
    let conf = fixture.to_string();
    let first = run("ADD", &conf, "ctr-a");
    let v = first.success().json();
    assert_eq!(v["cniVersion"], "0.3.1");
    assert_eq!(
        v["ips"],
        json!([{"version": "4", "address": "172.17.0.30/24"}])
    );
    let again = run("ADD", &conf, "ctr-a");
    assert_eq!(again.success().stdout, first.stdout, "ADD is idempotent");
    assert_eq!(
        addresses(&run("ADD", &conf, "ctr-b").success().json()),
        ["172.17.0.31/24"]
    );
    run("DEL", &conf, "ctr-a").success();
    run("DEL", &conf, "ctr-a").success();
    // Round-robin, as host-local: the freed .30 comes last.
    assert_eq!(
        addresses(&run("ADD", &conf, "ctr-c").success().json()),
        ["172.17.0.32/24"]
    );
    // CHECK needs a 0.4.0 config.
    assert_eq!(run("CHECK", &conf, "ctr-b").code(), 1);
}

#[test]
fn plain_ipam_and_ipam_cni_are_the_same_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let c = conf(
        "1.0.0",
        "net",
        dir.path(),
        json!({"type": "ipam", "range": "192.0.2.0/29"}),
    );
    let mut cmd = Command::new(BIN);
    let out = cmd
        .arg("cni")
        .env_clear()
        .env("CNI_COMMAND", "VERSION")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("supportedVersions"));
    let out = Command::new(BIN).arg("cni").env_clear().output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["code"], 4, "{v}");
    assert_eq!(
        addresses(&run("ADD", &c, "x").success().json()),
        ["192.0.2.1/29"]
    );
}

#[test]
fn host_local_style_dual_stack_with_routes_and_dns() {
    let dir = tempfile::tempdir().unwrap();
    let mut c: Value = serde_json::from_str(&conf(
        "1.0.0",
        "dual",
        dir.path(),
        json!({
            "type": "host-local",
            "ranges": [
                [{"subnet": "192.0.2.0/24", "rangeStart": "192.0.2.10", "rangeEnd": "192.0.2.20"}],
                [{"subnet": "2001:db8:1::/64", "gateway": "2001:db8:1::fe"}]
            ],
            "routes": [{"dst": "0.0.0.0/0"}, {"dst": "2001:db8:2::/64", "gw": "2001:db8:1::fe"}]
        }),
    ))
    .unwrap();
    c["dns"] = json!({"nameservers": ["192.0.2.53"], "search": ["example.com"]});
    let c = c.to_string();
    let v = run("ADD", &c, "c1").success().json();
    assert_eq!(
        v,
        json!({
            "cniVersion": "1.0.0",
            "ips": [
                {"address": "192.0.2.10/24", "gateway": "192.0.2.1"},
                {"address": "2001:db8:1::1/64", "gateway": "2001:db8:1::fe"}
            ],
            "routes": [{"dst": "0.0.0.0/0"}, {"dst": "2001:db8:2::/64", "gw": "2001:db8:1::fe"}],
            "dns": {"nameservers": ["192.0.2.53"], "search": ["example.com"]}
        })
    );
    let v = run("ADD", &c, "c2").success().json();
    assert_eq!(addresses(&v), ["192.0.2.11/24", "2001:db8:1::2/64"]);
}

#[test]
fn whereabouts_ip_ranges_give_dual_stack_and_exclusions_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let c = conf(
        "0.4.0",
        "wb",
        dir.path(),
        json!({
            "type": "whereabouts",
            "ipRanges": [
                {"range": "192.0.2.225-192.0.2.230/28", "exclude": ["192.0.2.225/32", "192.0.2.226/31"]},
                {"range": "2001:db8::/116"}
            ],
            "gateway": "192.0.2.238"
        }),
    );
    let v = run("ADD", &c, "c1").success().json();
    assert_eq!(
        v["ips"],
        json!([
            {"version": "4", "address": "192.0.2.228/28", "gateway": "192.0.2.238"},
            {"version": "6", "address": "2001:db8::1/116"}
        ])
    );
    run("CHECK", &c, "c1").success();
}

#[test]
fn check_fails_once_the_addresses_are_gone_and_del_of_unknown_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let c = conf(
        "1.1.0",
        "chk",
        dir.path(),
        json!({"ranges": [[{"subnet": "198.51.100.0/24"}]]}),
    );
    // Nothing known yet, not even the store: DEL succeeds and creates nothing.
    run("DEL", &c, "ghost").success();
    assert!(snapshot(dir.path()).is_empty());
    assert_eq!(run("CHECK", &c, "ghost").code(), 999);
    let added = run("ADD", &c, "c1").success().json();
    run("CHECK", &c, "c1").success();
    // With the previous result, it must list the address.
    let mut with_prev: Value = serde_json::from_str(&c).unwrap();
    with_prev["prevResult"] = added.clone();
    run("CHECK", &with_prev.to_string(), "c1").success();
    with_prev["prevResult"]["ips"][0]["address"] = json!("198.51.100.99/24");
    assert_eq!(run("CHECK", &with_prev.to_string(), "c1").code(), 999);
    run("DEL", &c, "c1").success();
    assert_eq!(run("CHECK", &c, "c1").code(), 999);
    run("DEL", &c, "never-added").success();
    assert!(run_with(BIN, "STATUS", &c, "", &[("CNI_CONTAINERID", None)]).ok);
}

#[test]
fn gc_drops_every_attachment_not_listed() {
    let dir = tempfile::tempdir().unwrap();
    let ipam = json!({"ranges": [[{"subnet": "192.0.2.0/24"}], [{"subnet": "2001:db8::/64"}]]});
    let c = conf("1.1.0", "gcnet", dir.path(), ipam.clone());
    let other = conf("1.1.0", "othernet", dir.path(), ipam);
    for ctr in ["c1", "c2", "c3"] {
        run("ADD", &c, ctr).success();
    }
    run("ADD", &other, "c1").success();
    let mut gc: Value = serde_json::from_str(&c).unwrap();
    let no_list = gc.to_string();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "c2", "ifname": "eth0"}]);
    let gc = gc.to_string();
    let env = [
        ("CNI_CONTAINERID", None),
        ("CNI_IFNAME", None),
        ("CNI_NETNS", None),
    ];
    assert_eq!(run_with(BIN, "GC", &no_list, "", &env).code(), 7);
    // Within the grace period (60 s by default) an attachment may be an ADD still in flight
    // when the runtime listed what it holds: nothing is freed.
    run_with(BIN, "GC", &gc, "", &env).success();
    run("CHECK", &c, "c1").success();
    let mut bad: Value = serde_json::from_str(&gc).unwrap();
    bad["ipam"]["gc_grace"] = json!("soon");
    let bad = run_with(BIN, "GC", &bad.to_string(), "", &env);
    assert_eq!(bad.code(), 7);
    assert!(bad.stdout.contains("ipam.gc_grace"), "{}", bad.stdout);
    let mut gc: Value = serde_json::from_str(&gc).unwrap();
    gc["ipam"]["gc_grace"] = json!("0s");
    let gc = gc.to_string();
    run_with(BIN, "GC", &gc, "", &env).success();
    run("CHECK", &c, "c2").success();
    assert_eq!(run("CHECK", &c, "c1").code(), 999);
    assert_eq!(run("CHECK", &c, "c3").code(), 999);
    // Another network's attachments are not this GC's business.
    run("CHECK", &other, "c1").success();
    // GC needs a 1.1.0 config.
    let old = gc.replace("\"1.1.0\"", "\"1.0.0\"");
    assert_eq!(run_with(BIN, "GC", &old, "", &env).code(), 1);

    // Two networks sharing their pools (one network_name): a GC of one knows nothing of the
    // other's attachments and frees nothing.
    let shared = json!({"range": "198.51.100.0/24", "network_name": "shared"});
    let a = conf("1.1.0", "net-a", dir.path(), shared.clone());
    let b = conf("1.1.0", "net-b", dir.path(), shared);
    run("ADD", &a, "a1").success();
    run("ADD", &b, "b1").success();
    let mut gc_a: Value = serde_json::from_str(&a).unwrap();
    gc_a["cni.dev/valid-attachments"] = json!([{"containerID": "a1", "ifname": "eth0"}]);
    gc_a["ipam"]["gc_grace"] = json!("0s");
    run_with(BIN, "GC", &gc_a.to_string(), "", &env).success();
    run("CHECK", &b, "b1").success();
}

/// One range shared by two nodes (one store): each node's runtime lists only its own
/// attachments, so a GC frees only its own node's reservations, never another node's live ones.
#[test]
fn gc_frees_only_its_own_nodes_reservations() {
    let dir = tempfile::tempdir().unwrap();
    let ipam = json!({"range": "198.51.100.0/24", "node_local": true, "gc_grace": "0s"});
    let c = conf("1.1.0", "two-nodes", dir.path(), ipam);
    let on = |node: &'static str, args: &'static str| {
        [("IPAM_NODE_NAME", Some(node)), ("CNI_ARGS", Some(args))]
    };
    let pod = "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web-0";
    for (node, ctr) in [("node-a", "a1"), ("node-a", "a2"), ("node-b", "b1")] {
        run_with(BIN, "ADD", &c, ctr, &on(node, pod)).success();
    }
    let listing = ipam_list_json(dir.path());
    assert!(
        listing.contains("b1/eth0") && listing.contains("node-b") && listing.contains("ns/web-0"),
        "{listing}"
    );
    let mut gc: Value = serde_json::from_str(&c).unwrap();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "a1", "ifname": "eth0"}]);
    let env = [
        ("CNI_CONTAINERID", None),
        ("CNI_IFNAME", None),
        ("IPAM_NODE_NAME", Some("node-a")),
    ];
    run_with(BIN, "GC", &gc.to_string(), "", &env).success();
    run_with(BIN, "CHECK", &c, "a1", &on("node-a", "")).success();
    assert_eq!(
        run_with(BIN, "CHECK", &c, "a2", &on("node-a", "")).code(),
        999
    );
    run_with(BIN, "CHECK", &c, "b1", &on("node-b", "")).success();
}

#[test]
#[allow(clippy::too_many_lines)] // one case per kind of bad input, each with its code
fn bad_input_gets_the_right_code_and_leaves_the_store_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let good = |ipam: Value| conf("1.0.0", "bad", dir.path(), ipam);
    let base = json!({"range": "192.0.2.0/30"});
    // Fill the range (two addresses).
    run("ADD", &good(base.clone()), "c1").success();
    run("ADD", &good(base.clone()), "c2").success();
    let before = snapshot(dir.path());
    let mut cases: Vec<(&str, String, Env<'_>, u64)> = vec![
        (
            "malformed JSON",
            "{\"cniVersion\": \"1.0.0\",".into(),
            vec![],
            6,
        ),
        ("not an object", "[1]".into(), vec![], 6),
        (
            "missing CNI_CONTAINERID",
            good(base.clone()),
            vec![("CNI_CONTAINERID", None)],
            4,
        ),
        (
            "missing CNI_NETNS",
            good(base.clone()),
            vec![("CNI_NETNS", None)],
            4,
        ),
        (
            "missing CNI_PATH",
            good(base.clone()),
            vec![("CNI_PATH", None)],
            4,
        ),
        (
            "unknown CNI_COMMAND",
            good(base.clone()),
            vec![("CNI_COMMAND", Some("ATTACH"))],
            4,
        ),
        (
            "bad CNI_IFNAME",
            good(base.clone()),
            vec![("CNI_IFNAME", Some("a/b"))],
            4,
        ),
        (
            "bad CNI_ARGS",
            good(base.clone()),
            vec![("CNI_ARGS", Some("junk"))],
            4,
        ),
        (
            "CNI_ARGS IP out of range",
            good(base.clone()),
            vec![("CNI_ARGS", Some("IP=198.51.100.1"))],
            4,
        ),
        ("exhausted range", good(base.clone()), vec![], 999),
        (
            "unsupported version",
            good(base.clone()).replace("1.0.0", "0.2.0"),
            vec![],
            1,
        ),
        (
            "unknown version",
            good(base.clone()).replace("1.0.0", "2.0.0"),
            vec![],
            1,
        ),
        (
            "no cniVersion",
            good(base.clone()).replace("\"cniVersion\":\"1.0.0\",", ""),
            vec![],
            1,
        ),
        (
            "no ipam",
            json!({"cniVersion": "1.0.0", "name": "bad"}).to_string(),
            vec![],
            7,
        ),
        (
            "bad network name",
            good(base.clone()).replace("\"bad\"", "\"a b\""),
            vec![],
            7,
        ),
        (
            "range_start outside the cidr",
            good(json!({"range": "192.0.2.0/24", "range_start": "198.51.100.1"})),
            vec![],
            7,
        ),
        (
            "rangeStart outside the subnet",
            good(json!({"ranges": [[{"subnet": "192.0.2.0/24", "rangeStart": "192.0.3.1"}]]})),
            vec![],
            7,
        ),
        (
            "gateway outside the subnet",
            good(json!({"ranges": [[{"subnet": "192.0.2.0/24", "gateway": "198.51.100.1"}]]})),
            vec![],
            7,
        ),
        (
            "mixed families in one range set",
            good(json!({"ranges": [[{"subnet": "192.0.2.0/24"}, {"subnet": "2001:db8::/64"}]]})),
            vec![],
            7,
        ),
        (
            "overlapping range sets",
            good(json!({"ranges": [[{"subnet": "192.0.2.0/24"}], [{"subnet": "192.0.2.0/25"}]]})),
            vec![],
            7,
        ),
        (
            "subnet with host bits",
            good(json!({"ranges": [[{"subnet": "192.0.2.1/24"}]]})),
            vec![],
            7,
        ),
        (
            "range without length",
            good(json!({"range": "192.0.2.1-192.0.2.9"})),
            vec![],
            7,
        ),
        (
            "unknown ipam key",
            good(json!({"range": "192.0.2.0/24", "rnage_start": "192.0.2.9"})),
            vec![],
            7,
        ),
        (
            "both styles",
            good(json!({"range": "192.0.2.0/24", "ranges": []})),
            vec![],
            7,
        ),
        (
            "relative store",
            good(base.clone()).replace(dir.path().to_str().unwrap(), "rel/store"),
            vec![],
            7,
        ),
        (
            "bad route",
            good(json!({"range": "192.0.2.0/30", "routes": [{"gw": "192.0.2.1"}]})),
            vec![],
            7,
        ),
    ];
    // DEL and CHECK read the config as strictly.
    cases.push((
        "DEL of a bad config",
        good(json!({"range": "bogus"})),
        vec![("CNI_COMMAND", Some("DEL"))],
        7,
    ));
    for (what, text, env, code) in cases {
        let out = run_with(BIN, "ADD", &text, "c3", &env);
        assert_eq!(out.code(), code, "{what}: {}", out.stdout);
        assert_eq!(snapshot(dir.path()), before, "{what}: the store changed");
    }
    // A store that does not exist is not created by a bad call.
    let fresh = dir.path().join("fresh");
    let text = conf(
        "1.0.0",
        "bad",
        &fresh,
        json!({"range": "192.0.2.0/24", "range_end": "192.0.3.0"}),
    );
    assert_eq!(run("ADD", &text, "c1").code(), 7);
    assert!(!fresh.exists());
}

#[test]
fn a_failed_dual_stack_add_gives_back_what_it_took() {
    let dir = tempfile::tempdir().unwrap();
    let c = conf(
        "1.0.0",
        "half",
        dir.path(),
        json!({"ipRanges": [{"range": "192.0.2.0/24"}, {"range": "2001:db8::/126"}]}),
    );
    for ctr in ["a", "b", "c"] {
        run("ADD", &c, ctr).success();
    }
    // IPv6 has no address left (::1 to ::3); IPv4 would have had .4.
    assert_eq!(run("ADD", &c, "d").code(), 999);
    // The pool's records are the entries named by an address (ipam-store(5)).
    let v4 = dir.path().join("pools/cni%2Fhalf%2F0");
    let held: Vec<_> = std::fs::read_dir(v4)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_str().unwrap().parse::<std::net::IpAddr>().is_ok()
        })
        .collect();
    assert_eq!(held.len(), 3, "d's IPv4 address was given back");
    // Once an IPv6 address is free, d gets both.
    run("DEL", &c, "a").success();
    assert_eq!(
        addresses(&run("ADD", &c, "d").success().json()),
        ["192.0.2.4/24", "2001:db8::1/126"]
    );
}

#[test]
fn a_requested_address_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let c = conf("1.0.0", "req", dir.path(), json!({"range": "192.0.2.0/24"}));
    let args = [(
        "CNI_ARGS",
        Some("IgnoreUnknown=1;K8S_POD_NAME=p;IP=192.0.2.77"),
    )];
    let first = run_with(BIN, "ADD", &c, "c1", &args);
    assert_eq!(addresses(&first.success().json()), ["192.0.2.77/24"]);
    assert_eq!(run_with(BIN, "ADD", &c, "c1", &args).stdout, first.stdout);
    assert_eq!(run_with(BIN, "ADD", &c, "c2", &args).code(), 999);

    // The `ips` capability (how Multus passes a pod's static address) and args.cni.ips.
    let mut with_caps: Value = serde_json::from_str(&c).unwrap();
    with_caps["runtimeConfig"] = json!({"ips": ["192.0.2.88/24"]});
    let caps = with_caps.to_string();
    assert_eq!(
        addresses(&run("ADD", &caps, "c3").success().json()),
        ["192.0.2.88/24"]
    );
    let mut with_args: Value = serde_json::from_str(&c).unwrap();
    with_args["args"] = json!({"cni": {"ips": ["192.0.2.99"]}});
    assert_eq!(
        addresses(&run("ADD", &with_args.to_string(), "c4").success().json()),
        ["192.0.2.99/24"]
    );
    // The network address is never handed out, asked for or not; the store stays as it was.
    let mut bad: Value = serde_json::from_str(&c).unwrap();
    bad["runtimeConfig"] = json!({"ips": ["192.0.2.0/24"]});
    let before = snapshot(dir.path());
    assert_eq!(run("ADD", &bad.to_string(), "c5").code(), 4);
    assert_eq!(snapshot(dir.path()), before);
    bad["runtimeConfig"] = json!({"ips": ["not-an-address"]});
    assert_eq!(run("ADD", &bad.to_string(), "c5").code(), 7);
}

/// host-local, or `None` (skipped with a message, a failure under CI: [`ipi_lab::tool`]) when
/// it is missing.
fn host_local() -> Option<&'static str> {
    ipi_lab::tool(HOST_LOCAL, "containernetworking-plugins").then_some(HOST_LOCAL)
}

/// The shape two results must share: per address its family, whether it is inside `ranges`
/// and its gateway; and the routes.
fn shape(result: &Value, ranges: &[IpNetwork]) -> (Vec<(bool, bool, Value)>, Value) {
    let ips = result["ips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ip| {
            let net: IpNetwork = ip["address"].as_str().unwrap().parse().unwrap();
            let inside = ranges
                .iter()
                .any(|r| r.contains(net.ip()) && r.prefix() == net.prefix());
            (net.is_ipv4(), inside, ip["gateway"].clone())
        })
        .collect();
    (ips, result["routes"].clone())
}

#[test]
#[allow(clippy::too_many_lines)] // the configs side by side, one table
fn host_local_and_ipam_answer_the_same_configs_alike() {
    let Some(host_local) = host_local() else {
        return;
    };
    let ipams = [
        json!({
            "type": "host-local",
            "ranges": [
                [{"subnet": "192.0.2.0/24", "rangeStart": "192.0.2.100", "rangeEnd": "192.0.2.110"}],
                [{"subnet": "2001:db8:5::/64", "gateway": "2001:db8:5::fe"}]
            ],
            "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]
        }),
        json!({"type": "host-local", "subnet": "198.51.100.0/28", "gateway": "198.51.100.14"}),
        json!({
            "type": "host-local",
            "ranges": [[
                {"subnet": "203.0.113.0/30"},
                {"subnet": "203.0.113.64/29", "rangeStart": "203.0.113.66", "gateway": "203.0.113.70"}
            ]],
            "routes": [{"dst": "192.0.2.0/24", "gw": "203.0.113.1"}]
        }),
    ];
    for version in ["0.3.1", "0.4.0", "1.0.0"] {
        for (n, ipam) in ipams.iter().enumerate() {
            let ours_dir = tempfile::tempdir().unwrap();
            let theirs_dir = tempfile::tempdir().unwrap();
            let mut ipam = ipam.clone();
            ipam["dataDir"] = json!(theirs_dir.path());
            // host-local ignores `store`, ipam ignores `dataDir`: one config for both.
            let c = conf(
                version,
                &format!("interop{n}"),
                ours_dir.path(),
                ipam.clone(),
            );
            let ranges: Vec<IpNetwork> = serde_json::from_str::<Value>(&c).unwrap()["ipam"]
                .pointer("/ranges")
                .map_or_else(
                    || vec![ipam["subnet"].as_str().unwrap().parse().unwrap()],
                    |sets| {
                        sets.as_array()
                            .unwrap()
                            .iter()
                            .flat_map(|s| s.as_array().unwrap().iter())
                            .map(|r| r["subnet"].as_str().unwrap().parse().unwrap())
                            .collect()
                    },
                );
            for step in 0..6 {
                let ctr = format!("ctr-{step}");
                if step == 4 {
                    // A release between: both hand out round-robin, so the next differs from it.
                    run_with(host_local, "DEL", &c, "ctr-1", &[]).success();
                    run("DEL", &c, "ctr-1").success();
                }
                let theirs = run_with(host_local, "ADD", &c, &ctr, &[]);
                let ours = run("ADD", &c, &ctr);
                let what = format!("{version} config {n} {ctr}");
                if !theirs.ok {
                    // Both run out at the same point, with host-local's code.
                    assert_eq!(ours.code(), theirs.code(), "{what}: {}", theirs.stdout);
                    continue;
                }
                let (t, o) = (theirs.json(), ours.success().json());
                assert_eq!(o["cniVersion"], t["cniVersion"], "{what}");
                assert_eq!(shape(&o, &ranges), shape(&t, &ranges), "{what}: {o} vs {t}");
                assert!(
                    shape(&o, &ranges).0.iter().all(|(_, inside, _)| *inside),
                    "{what}: {o}"
                );
                assert_eq!(addresses(&o), addresses(&t), "{what}: the same order too");
                if version.starts_with("0.") {
                    assert_eq!(o["ips"][0]["version"], t["ips"][0]["version"], "{what}");
                }
                assert_eq!(
                    run("ADD", &c, &ctr).stdout,
                    ours.stdout,
                    "{what}: ours is idempotent"
                );
                let check = run("CHECK", &c, &ctr);
                assert_eq!(check.ok, version != "0.3.1", "{what}: {}", check.stdout);
            }
        }
    }
}

/// `ipam gc` shows what the runtime's GC would make of each reservation, frees nothing
/// unless told, and with `--free` frees what is leaked and only that.
#[test]
fn ipam_gc_lists_what_looks_leaked_and_why_before_freeing() {
    let dir = tempfile::tempdir().unwrap();
    let ipam = json!({"range": "198.51.100.0/24", "node_local": true, "gc_grace": "0s"});
    let c = conf("1.1.0", "audit", dir.path(), ipam.clone());
    for (node, ctr) in [("node-a", "a1"), ("node-a", "a2"), ("node-b", "b1")] {
        run_with(BIN, "ADD", &c, ctr, &[("IPAM_NODE_NAME", Some(node))]).success();
    }
    let config = dir.path().join("net.json");
    std::fs::write(&config, &c).unwrap();
    let keep = dir.path().join("keep");
    std::fs::write(&keep, "# what the runtime holds\na1/eth0\n\n").unwrap();
    let gc = |extra: &[&str], config: &Path| {
        let mut cmd = Command::new(BIN);
        cmd.env_clear()
            .args(["gc", "--node", "node-a", "--config"])
            .arg(config)
            .arg("--keep")
            .arg(&keep)
            .args(extra);
        cmd.output().unwrap()
    };
    let before = ipam_list_json(dir.path());
    let out = gc(&[], &config);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "something leaked: {text}");
    let line = |owner: &str| {
        text.lines()
            .find(|l| l.contains(&format!("\t{owner}\t")))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(line("a1/eth0").contains("kept: attached"), "{text}");
    assert!(line("a2/eth0").contains("leaked"), "{text}");
    assert!(line("b1/eth0").contains("kept: node node-b's"), "{text}");
    assert_eq!(ipam_list_json(dir.path()), before, "nothing freed");
    // Within the grace period it is kept, and says so.
    let young = dir.path().join("young.json");
    let mut y: Value = serde_json::from_str(&c).unwrap();
    y["ipam"]["gc_grace"] = json!("1h");
    std::fs::write(&young, y.to_string()).unwrap();
    let out = gc(&["--json"], &young);
    assert_eq!(out.status.code(), Some(0));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .all(|r| r["leaked"] == false),
        "{rows}"
    );
    assert!(rows.to_string().contains("within gc_grace"), "{rows}");
    // --free frees a2 alone.
    let out = gc(&["--free"], &config);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("(freed)"));
    run_with(
        BIN,
        "CHECK",
        &c,
        "a1",
        &[("IPAM_NODE_NAME", Some("node-a"))],
    )
    .success();
    assert_eq!(run("CHECK", &c, "a2").code(), 999);
    run("CHECK", &c, "b1").success();
    // A --keep line that is not an attachment is named, and nothing is done.
    std::fs::write(&keep, "a1/eth0\nnot-an-attachment\n").unwrap();
    let out = gc(&["--free"], &config);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("keep:2") && err.contains("not-an-attachment"),
        "{err}"
    );
}
