//! `vrrpd render`: what OpenShift configures on each role, from install-config.yaml, equal to
//! the keepalived.conf a real cluster had; accepted by the real keepalived; and what `render`
//! writes reads back to the same model.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use vrrpd::config::{self, Config, Location};

fn seeds(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/seeds")
        .join(name)
}

fn render(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vrrpd"))
        .arg("render")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn render_role(role: &str, interface: &str, extra: &[&str]) -> String {
    let cluster = seeds("managed-install-config.yaml");
    let mut args = vec![
        "--cluster",
        cluster.to_str().unwrap(),
        "--role",
        role,
        "--interface",
        interface,
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = render(&args);
    assert_eq!(code, 0, "{err}");
    out
}

/// Lines without comments, indentation and blank lines.
fn significant(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .map(str::to_string)
        .collect()
}

/// The model without the places it was read from.
fn placeless(mut c: Config) -> Config {
    let nowhere = Location::default();
    for s in &mut c.scripts {
        s.location = nowhere.clone();
        s.command.location = nowhere.clone();
    }
    for i in &mut c.instances {
        i.location = nowhere.clone();
        for n in [
            &mut i.notify.master,
            &mut i.notify.backup,
            &mut i.notify.fault,
            &mut i.notify.stop,
            &mut i.notify.any,
        ]
        .into_iter()
        .flatten()
        {
            n.location = nowhere.clone();
        }
    }
    for g in &mut c.sync_groups {
        g.location = nowhere.clone();
        let n = &mut g.notify;
        for c in [
            &mut n.master,
            &mut n.backup,
            &mut n.fault,
            &mut n.stop,
            &mut n.any,
        ]
        .into_iter()
        .flatten()
        {
            c.location = nowhere.clone();
        }
    }
    c
}

/// The one line `render` adds to every instance of OpenShift's templates: vrrpd's keyword for
/// fast track-script moves (see openshift.rs).
const OURS: &str = "preempt_on_lower_priority on";

/// OpenShift's templates with `OURS` in every instance, and script security on every role:
/// the worker's template has none, so `render` adds the block; the master's runs scripts as
/// root, which `render` does only when asked (`--script-user root`).
#[test]
fn a_master_and_a_worker_get_what_openshift_rendered() {
    let security = ["global_defs {", "enable_script_security", "}"];
    for (role, fixture, extra, added, removed) in [
        (
            "master",
            "managed-keepalived-master.conf",
            &["--script-user", "root"][..],
            &[][..],
            None,
        ),
        (
            "master",
            "managed-keepalived-master.conf",
            &[],
            &[],
            Some("script_user root"),
        ),
        (
            "worker",
            "managed-keepalived-worker.conf",
            &[],
            &security[..],
            None,
        ),
    ] {
        let ours = significant(&render_role(role, "ens3", extra));
        let theirs = significant(&std::fs::read_to_string(seeds(fixture)).unwrap());
        let instances = ours
            .iter()
            .filter(|l| l.starts_with("vrrp_instance "))
            .count();
        let added_ours = ours.iter().filter(|l| *l == OURS).count();
        assert_eq!(added_ours, instances, "{role}: one `{OURS}` an instance");
        let without: Vec<String> = ours.into_iter().filter(|l| l != OURS).collect();
        let expected: Vec<String> = (added.iter().map(|l| l.to_string()))
            .chain(theirs.into_iter().filter(|l| Some(l.as_str()) != removed))
            .collect();
        assert_eq!(without, expected, "{role} {extra:?}");
    }
}

#[test]
fn the_bootstrap_node_holds_the_api_vip_at_a_higher_priority() {
    let c = config::parse_str(&render_role("bootstrap", "ens3", &[]), "bootstrap").unwrap();
    assert_eq!(c.instances.len(), 1);
    let api = &c.instances[0];
    assert_eq!(
        (api.name.as_str(), api.vrid, api.priority),
        ("managed_API", 124, 70)
    );
    assert_eq!(api.track_scripts[0].name, "chk_ocp");
}

#[test]
fn unicast_peers_come_from_the_inventory_by_role() {
    let nodes = seeds("managed-nodes.kubectl.json");
    let c = config::parse_str(
        &render_role(
            "master",
            "ens3",
            &["--nodes", nodes.to_str().unwrap(), "--unicast"],
        ),
        "unicast",
    )
    .unwrap();
    // tests/fixtures/seeds/managed-nodes.kubectl.json, read by eye: masters 10.0.3.211,
    // 10.0.3.51, 10.0.3.229; workers 10.0.1.194, 10.0.2.41, 10.0.3.23; no bootstrap node.
    // The API instance's peers are the bootstrap and master nodes, the Ingress instance's the
    // masters and workers, each list sorted.
    let ips = |list: &[&str]| -> Vec<std::net::IpAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    };
    let api = c.instance("managed_API").unwrap();
    assert_eq!(
        api.unicast_peers,
        ips(&["10.0.3.51", "10.0.3.211", "10.0.3.229"])
    );
    let ingress = c.instance("managed_INGRESS").unwrap();
    assert_eq!(
        ingress.unicast_peers,
        ips(&[
            "10.0.1.194",
            "10.0.2.41",
            "10.0.3.23",
            "10.0.3.51",
            "10.0.3.211",
            "10.0.3.229"
        ])
    );
}

#[test]
fn scripts_dir_puts_our_track_scripts_in_place_of_openshifts_and_curl() {
    for role in ["bootstrap", "master", "worker"] {
        let openshift = render_role(role, "ens3", &[]);
        let ours = render_role(role, "ens3", &["--scripts-dir", "/etc/ipi-net/keepalived/"]);
        let expected = openshift
            .replace(
                "/etc/keepalived/chk_ocp_script",
                "/etc/ipi-net/keepalived/chk_ocp_script",
            )
            .replace(
                "/usr/bin/curl -o /dev/null -Lfs http://localhost:1936/healthz/ready",
                "/etc/ipi-net/keepalived/chk_ingress.sh",
            );
        assert_ne!(ours, openshift, "{role}");
        assert_eq!(ours, expected, "{role}: only the script lines change");
        assert!(!ours.contains("curl"), "{role}: {ours}");
        let c = config::parse_str(&ours, role).unwrap();
        for s in &c.scripts {
            assert_eq!(s.command.words[0], "/usr/bin/timeout", "{role} {}", s.name);
            assert!(
                s.command.words[2].starts_with("/etc/ipi-net/keepalived/chk_"),
                "{role} {}: {:?}",
                s.name,
                s.command.words
            );
        }
    }
    let master = render_role(
        "master",
        "ens3",
        &["--scripts-dir", "/etc/ipi-net/keepalived"],
    );
    for script in [
        "chk_ocp_script.sh",
        "chk_ocp_script_both.sh",
        "chk_ingress.sh",
    ] {
        let path = format!("/etc/ipi-net/keepalived/{script}");
        assert!(master.contains(&path), "{path} in {master}");
    }
}

#[test]
fn a_scripts_dir_that_cannot_go_into_a_script_line_is_refused() {
    let cluster = seeds("managed-install-config.yaml");
    for (dir, says) in [
        ("keepalived", "absolute"),
        ("/etc/my scripts", "white space"),
    ] {
        let (code, out, err) = render(&[
            "--cluster",
            cluster.to_str().unwrap(),
            "--role",
            "master",
            "--interface",
            "ens3",
            "--scripts-dir",
            dir,
        ]);
        assert_eq!(code, 2, "{dir}: {err}");
        assert!(out.is_empty(), "{dir}");
        assert!(
            err.contains("--scripts-dir") && err.contains(says),
            "{dir}: {err}"
        );
    }
}

#[test]
fn what_render_writes_reads_back_the_same() {
    for fixture in [
        "managed-keepalived-master.conf",
        "managed-keepalived-worker.conf",
    ] {
        let path = seeds(fixture);
        let (code, out, err) = render(&["-f", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        let first = placeless(config::load(&path).unwrap());
        let again = placeless(config::parse_str(&out, "rendered").unwrap());
        assert_eq!(first, again, "{fixture}");
    }
    let rich = "global_defs {\n    vrrp_version 3\n    vrrp_garp_master_refresh 30\n}\n\
        vrrp_script s {\n    script \"/bin/echo 'a b' it\\\\'s\"\n    interval 0.5\n    timeout 2\n    user nobody nogroup\n    init_fail\n    rise 2\n}\n\
        vrrp_instance I {\n    interface eth0\n    virtual_router_id 7\n    priority 200\n    advert_int 0.25\n    nopreempt\n    preempt_delay 1.5\n    \
        unicast_src_ip 2001:db8::1\n    unicast_peer {\n        2001:db8::2\n    }\n    virtual_ipaddress {\n        2001:db8::7/64 dev eth1 label x\n    }\n    \
        track_script {\n        s weight -20\n    }\n    track_interface {\n        eth1 weight 5\n    }\n    dont_track_primary\n    lower_prio_no_advert\n    \
        notify \"/bin/n\"\n    garp_master_repeat 2\n}\n\
        vrrp_sync_group G {\n    group {\n        I\n    }\n    notify_master /bin/m\n}\n";
    let first = placeless(config::parse_str(rich, "rich").unwrap());
    let written = config::write::write(&first);
    let again = placeless(config::parse_str(&written, "written").unwrap());
    assert_eq!(first, again, "{written}");
    assert_eq!(
        first.script("s").unwrap().command.words,
        ["/bin/echo", "a b", "it's"]
    );
}

#[test]
fn a_wrong_cluster_is_refused_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("install-config.yaml");
    let text = std::fs::read_to_string(seeds("managed-install-config.yaml")).unwrap();
    std::fs::write(&bad, text.replace("10.0.0.5", "10.0.0.300")).unwrap();
    let (code, out, err) = render(&[
        "--cluster",
        bad.to_str().unwrap(),
        "--role",
        "master",
        "--interface",
        "ens3",
    ]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("10.0.0.300"), "{err}");
}

#[test]
fn keepalived_accepts_what_render_writes() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = ipi_lab::Lab::new().unwrap();
    let host = lab.host("k").unwrap();
    for (role, fixture) in [
        ("bootstrap", None),
        ("master", Some("managed-keepalived-master.conf")),
        ("worker", Some("managed-keepalived-worker.conf")),
    ] {
        let conf = host.dir().join(format!("{role}.conf"));
        // Script security is on for every role: keepalived then runs a script with no user as
        // keepalived_script and, where that user does not exist (this host), removes it.
        let text = render_role(role, "eth0", &["--script-user", "root"]);
        std::fs::write(&conf, text).unwrap();
        let ours = complaints(&host, &conf);
        // keepalived's config test fails on warnings too: what it says of OpenShift's own file
        // (truncated passwords, scripts without script security on workers) is allowed, and
        // nothing more.
        let allowed = match fixture {
            Some(f) => {
                let theirs = host.dir().join(f);
                let text = std::fs::read_to_string(seeds(f)).unwrap();
                std::fs::write(&theirs, text.replace("ens3", "eth0")).unwrap();
                complaints(&host, &theirs)
            }
            None => vec!["Truncating auth_pass to 8 characters".to_string()],
        };
        // keepalived warns of vrrpd's own keyword and ignores it (its semantics, the default).
        let allowed = [
            allowed,
            vec![format!(
                "Unknown keyword '{}'",
                OURS.split(' ').next().unwrap()
            )],
        ]
        .concat();
        let extra: Vec<&String> = ours.iter().filter(|c| !allowed.contains(c)).collect();
        assert!(extra.is_empty(), "{role}: {extra:?}");
    }
}

/// What `keepalived --config-test` says of a file, without its file:line prefixes.
fn complaints(host: &ipi_lab::Host, conf: &Path) -> Vec<String> {
    let out = host
        .run(
            "keepalived",
            ["--config-test", "-f", conf.to_str().unwrap()],
        )
        .unwrap();
    let mut all: Vec<String> = out
        .stderr
        .lines()
        .chain(out.stdout.lines())
        .map(|l| l.rsplit_once(") ").map_or(l, |(_, m)| m).trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    all.sort();
    all.dedup();
    all
}

#[test]
fn both_families_of_a_role_are_one_sync_group_primary_first() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dual-stack-install-config.yaml");
    for (role, groups) in [
        (
            "master",
            &[("API", "API_V6"), ("INGRESS", "INGRESS_V6")][..],
        ),
        ("worker", &[("INGRESS", "INGRESS_V6")][..]),
        ("bootstrap", &[("API", "API_V6")][..]),
    ] {
        let args = [
            "--cluster",
            path.to_str().unwrap(),
            "--role",
            role,
            "--interface",
            "eth0",
        ];
        let (code, out, err) = render(&args);
        assert_eq!(code, 0, "{err}");
        let c = config::parse_str(&out, "rendered").unwrap();
        let names: Vec<(&str, Vec<&str>)> = c
            .sync_groups
            .iter()
            .map(|g| {
                (
                    g.name.as_str(),
                    g.members.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        let want: Vec<(String, Vec<String>)> = groups
            .iter()
            .map(|(v4, v6)| {
                (
                    format!("dual_{v4}_DUAL_STACK"),
                    vec![format!("dual_{v4}"), format!("dual_{v6}")],
                )
            })
            .collect();
        let want: Vec<(&str, Vec<&str>)> = want
            .iter()
            .map(|(g, m)| (g.as_str(), m.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(names, want, "{role}:\n{out}");
        // Both members run the same election: VRID, priority and track scripts.
        for g in &c.sync_groups {
            let [v4, v6] = [0, 1].map(|k| c.instance(&g.members[k]).unwrap());
            assert!(!v4.is_ipv6() && v6.is_ipv6(), "{role}: IPv4 first");
            assert_eq!(
                (v4.vrid, v4.priority, &v4.track_scripts),
                (v6.vrid, v6.priority, &v6.track_scripts)
            );
            assert!(v4.preempt_on_lower_priority && v6.preempt_on_lower_priority);
        }
    }
    // One family, no group.
    let c = config::parse_str(&render_role("master", "ens3", &[]), "rendered").unwrap();
    assert!(c.sync_groups.is_empty());
}
