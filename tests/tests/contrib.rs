//! contrib/ holds to its contract (contrib/README.md): every systemd unit passes
//! `systemd-analyze verify`, every role names existing units, every `ExecStart=` is one absolute
//! program with `${VAR}` references to the four node.env variables only, and parses with that
//! program's own command line once expanded from the example node.env files; the track scripts
//! are the ones vrrpd's `--scripts-dir` names; the examples use documentation addresses only;
//! the shell scripts (and those of the cluster lab's upstream stack, tests/fixtures/upstream) are
//! shellcheck-clean.
//!
//! `systemd-analyze` and `shellcheck` are Debian packages (scripts/test installs them); without
//! them those two tests skip with a message, except under CI=true, where they fail.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use ipi_net_tests::units;

/// The variables node.env defines, and the only ones a command line may use.
const NODE_ENV_VARS: [&str; 4] = ["IPI_ROLE", "IPI_HOSTNAME", "IPI_NODE_IP", "IPI_INTERFACE"];

/// The sandboxing every service has (contrib/README.md, "The units").
const HARDENING: [(&str, &str); 22] = [
    ("NoNewPrivileges", "yes"),
    ("ProtectSystem", "strict"),
    ("ProtectHome", "yes"),
    ("PrivateTmp", "yes"),
    ("PrivateDevices", "yes"),
    ("PrivateMounts", "yes"),
    ("ProtectKernelTunables", "yes"),
    ("ProtectKernelModules", "yes"),
    ("ProtectKernelLogs", "yes"),
    ("ProtectControlGroups", "yes"),
    ("ProtectClock", "yes"),
    ("ProtectHostname", "yes"),
    ("RestrictNamespaces", "yes"),
    ("RestrictSUIDSGID", "yes"),
    ("RestrictRealtime", "yes"),
    ("LockPersonality", "yes"),
    ("MemoryDenyWriteExecute", "yes"),
    ("RemoveIPC", "yes"),
    ("SystemCallArchitectures", "native"),
    ("SystemCallErrorNumber", "EPERM"),
    ("UMask", "0077"),
    ("Restart", "on-failure"),
];

/// The highest exposure `systemd-analyze security --offline=true` may give a unit of ours
/// (3.0: "OK"; Debian's keepalived, haproxy and avahi-daemon units score 9.6, etcd 9.2).
const EXPOSURE_BOUND: f64 = 3.0;

/// The units each role runs, as the demo and contrib/README.md rely on.
const ROLES: [(&str, &[&str]); 3] = [
    ("bootstrap", &["ipi-vrrpd"]),
    (
        "master",
        &[
            "ipi-vrrpd",
            "ipi-mdns-publish",
            "ipi-mdns-browse",
            "ipi-lb-proxy",
            "ipi-dns-render",
            "ipi-dnsmasq",
        ],
    ),
    (
        "worker",
        &[
            "ipi-vrrpd",
            "ipi-mdns-publish",
            "ipi-mdns-browse",
            "ipi-dns-render",
            "ipi-dnsmasq",
        ],
    ),
];

fn contrib() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../contrib")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// Every unit file: name and path.
fn units() -> Vec<(String, PathBuf)> {
    let units: Vec<(String, PathBuf)> = files(&contrib().join("systemd"))
        .into_iter()
        .map(|p| (p.file_name().unwrap().to_str().unwrap().to_string(), p))
        .collect();
    assert!(units.len() >= 7, "{units:?}");
    units
}

/// A unit file as (section, key, value, line) entries, read by the lab's own unit reader.
/// Continuation lines are refused here: one line per setting keeps the units easy to read.
fn entries(path: &Path) -> Vec<(String, String, String, usize)> {
    let text = std::fs::read_to_string(path).unwrap();
    if let Some(n) = text.lines().position(|l| l.trim_end().ends_with('\\')) {
        panic!("{}:{}: a continued line", path.display(), n + 1);
    }
    units::settings(path, &text)
        .unwrap()
        .into_iter()
        .map(|s| (s.section, s.key, s.value, s.line))
        .collect()
}

fn values(entries: &[(String, String, String, usize)], section: &str, key: &str) -> Vec<String> {
    entries
        .iter()
        .filter(|(s, k, _, _)| s == section && k == key)
        .map(|(_, _, v, _)| v.clone())
        .collect()
}

/// A node.env: VAR=value lines.
fn node_env(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("{}: not VAR=value: {l}", path.display()));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// Replaces every `${VAR}` in `word` from `env`; panics on anything else that systemd would
/// expand (`$VAR`, `%` specifiers).
fn expand(word: &str, env: &BTreeMap<String, String>, at: &str) -> String {
    let mut out = String::new();
    let mut rest = word;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let inner = after
            .strip_prefix('{')
            .and_then(|a| a.split_once('}'))
            .unwrap_or_else(|| panic!("{at}: `$` without `{{VAR}}` in {word}"));
        let value = env
            .get(inner.0)
            .unwrap_or_else(|| panic!("{at}: ${{{}}} is not defined in node.env", inner.0));
        out.push_str(value);
        rest = inner.1;
    }
    out.push_str(rest);
    out
}

/// Every unit's one ExecStart, split into words; checks the contract on the way.
fn exec_starts() -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for (name, path) in units() {
        if !name.ends_with(".service") {
            continue;
        }
        let e = entries(&path);
        let starts: Vec<_> = e
            .iter()
            .filter(|(s, k, _, _)| s == "Service" && k == "ExecStart")
            .collect();
        assert_eq!(starts.len(), 1, "{name}: exactly one ExecStart=");
        let (_, _, line, n) = starts[0];
        let at = format!("{}:{n}", path.display());
        for bad in ['"', '\'', '%', '\\', ';', '|', '&', '`', '<', '>'] {
            assert!(!line.contains(bad), "{at}: `{bad}` in {line}");
        }
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        let program = &words[0];
        assert!(
            program.starts_with('/'),
            "{at}: an absolute program path without a prefix: {program}"
        );
        assert!(
            program.starts_with("/usr/bin/") || program == "/usr/sbin/dnsmasq",
            "{at}: {program}"
        );
        for word in &words {
            let mut rest = word.as_str();
            while let Some(start) = rest.find("${") {
                let var = &rest[start + 2..];
                let (var, after) = var.split_once('}').expect("closed ${");
                assert!(
                    NODE_ENV_VARS.contains(&var),
                    "{at}: ${{{var}}} is not one of {NODE_ENV_VARS:?}"
                );
                rest = after;
            }
        }
        out.push((name, at, words));
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            let link = std::fs::read_link(entry.path()).unwrap();
            std::os::unix::fs::symlink(link, &target).unwrap();
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `systemd-analyze verify` in a root of its own: systemd's units from this machine, ours in
/// /etc/systemd/system, and an executable stand-in for every program our units run (vrrpd and
/// the others are not installed on a build machine). Every warning counts.
#[test]
fn systemd_analyze_verifies_every_unit() {
    if !ipi_lab::tool("systemd-analyze", "systemd") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let systemd_units = ["/usr/lib/systemd/system", "/lib/systemd/system"]
        .into_iter()
        .map(Path::new)
        .find(|d| d.join("sysinit.target").exists())
        .expect("systemd's own units (sysinit.target) in /usr/lib/systemd/system");
    copy_tree(systemd_units, &root.path().join("usr/lib/systemd/system"));
    let ours = root.path().join("etc/systemd/system");
    std::fs::create_dir_all(&ours).unwrap();
    let mut arguments = Vec::new();
    for (name, path) in units() {
        std::fs::copy(&path, ours.join(&name)).unwrap();
        arguments.push(ours.join(&name));
        for (section, key, value, _) in entries(&path) {
            if section != "Service" || !key.starts_with("Exec") {
                continue;
            }
            let program = value
                .trim_start_matches(['-', '@', ':', '+', '!'])
                .split_whitespace()
                .next()
                .unwrap()
                .to_string();
            let stand_in = root.path().join(program.trim_start_matches('/'));
            std::fs::create_dir_all(stand_in.parent().unwrap()).unwrap();
            std::fs::write(&stand_in, "#!/bin/sh\nexit 0\n").unwrap();
            std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let etc = root.path().join("etc/ipi-net");
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::copy(
        contrib().join("examples/master/node.env"),
        etc.join("node.env"),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(format!("--root={}", root.path().display()))
        .arg("--man=no")
        .args(&arguments)
        .env("SYSTEMD_LOG_COLOR", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "systemd-analyze verify: {}\n{stderr}",
        out.status
    );
    // The check bites: an unknown key is a warning, and a warning fails this test.
    std::fs::write(
        ours.join("ipi-broken.service"),
        "[Service]\nType=notify\nExecStart=/usr/bin/vrrpd run\nRestart=on-failur\n",
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(format!("--root={}", root.path().display()))
        .arg("--man=no")
        .arg(ours.join("ipi-broken.service"))
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stderr).trim().is_empty(),
        "systemd-analyze verify said nothing about a bad Restart="
    );
}

/// `systemd-analyze security --offline=true` of a unit file: its overall exposure (0.0 to 10.0).
fn exposure(path: &Path) -> f64 {
    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(path)
        .env("SYSTEMD_LOG_COLOR", "0")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| {
            let (_, level) = l.split_once("Overall exposure level for ")?;
            level
                .split_once(": ")?
                .1
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| {
            panic!(
                "systemd-analyze security {}: {}: no overall exposure in\n{text}{}",
                path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// The services of `units` whose exposure is over [`EXPOSURE_BOUND`], with their score; each
/// service's score is printed.
fn over_the_bound(units: &[(String, PathBuf)]) -> Vec<(String, f64)> {
    units
        .iter()
        .filter(|(name, _)| name.ends_with(".service"))
        .map(|(name, path)| (name.clone(), exposure(path)))
        .inspect(|(name, score)| eprintln!("{name}: {score:.1}"))
        .filter(|(_, score)| *score > EXPOSURE_BOUND)
        .collect()
}

/// Every service scores at most [`EXPOSURE_BOUND`] (README's table has the figures); and the
/// check bites: vrrpd's unit without its user and system call filter is over it.
#[test]
fn every_unit_is_exposed_at_most_three() {
    if !ipi_lab::tool("systemd-analyze", "systemd") {
        return;
    }
    let ours = units();
    let over = over_the_bound(&ours);
    assert!(
        over.is_empty(),
        "exposure over {EXPOSURE_BOUND} (systemd-analyze security --offline=true): {over:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let loose = dir.path().join("ipi-vrrpd.service");
    let text = std::fs::read_to_string(contrib().join("systemd/ipi-vrrpd.service")).unwrap();
    let loosened: String = text
        .lines()
        .filter(|l| {
            ![
                "User=",
                "Group=",
                "SystemCallFilter=",
                "ProtectProc=",
                "PrivateDevices=",
            ]
            .iter()
            .any(|k| l.starts_with(k))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&loose, loosened).unwrap();
    let over = over_the_bound(&[("ipi-vrrpd.service".into(), loose)]);
    assert_eq!(over.len(), 1, "a loosened ipi-vrrpd.service: {over:?}");
}

#[test]
fn every_role_runs_the_agreed_units_and_they_exist() {
    let dir = contrib().join("roles");
    let names: Vec<String> = files(&dir)
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["bootstrap", "master", "worker"]);
    for (role, expected) in ROLES {
        let text = std::fs::read_to_string(dir.join(role)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, expected, "contrib/roles/{role}");
        let mut read = Vec::new();
        for unit in &lines {
            let path = contrib().join("systemd").join(format!("{unit}.service"));
            assert!(
                path.is_file(),
                "contrib/roles/{role}: {} missing",
                path.display()
            );
            read.push(units::Unit::read(&path).unwrap());
        }
        // Listed in an order systemd could start them in (After=/Before= respected).
        let order = units::start_order(&read).unwrap();
        assert_eq!(
            order,
            (0..read.len()).collect::<Vec<_>>(),
            "contrib/roles/{role}: not in After= order"
        );
    }
    // Every service is some role's.
    for (name, _) in units() {
        if let Some(unit) = name.strip_suffix(".service") {
            assert!(
                ROLES.iter().any(|(_, units)| units.contains(&unit)),
                "{name} is in no role"
            );
        }
    }
}

/// The capabilities a service holds (its bounding set), as contrib/README.md gives them.
fn capabilities(service: &str) -> &'static [&'static str] {
    match service {
        // VIPs, VRRP, ARP/NA; scripts as their user, killed at their timeout.
        "ipi-vrrpd.service" => &[
            "CAP_NET_ADMIN",
            "CAP_NET_RAW",
            "CAP_SETUID",
            "CAP_SETGID",
            "CAP_KILL",
        ],
        "ipi-lb-proxy.service" => &["CAP_NET_ADMIN"],
        "ipi-dnsmasq.service" => &["CAP_NET_BIND_SERVICE"],
        // dns-render's SIGHUP goes to dnsmasq, which runs as the same user.
        _ => &[],
    }
}

#[test]
fn every_unit_reads_node_env_and_is_hardened() {
    for (name, path) in units() {
        let e = entries(&path);
        let at = path.display();
        if name.ends_with(".path") {
            let unit = values(&e, "Path", "Unit");
            assert_eq!(unit.len(), 1, "{at}");
            assert!(
                contrib().join("systemd").join(&unit[0]).is_file(),
                "{at}: {}",
                unit[0]
            );
            assert!(!values(&e, "Path", "PathChanged").is_empty(), "{at}");
            continue;
        }
        assert_eq!(
            values(&e, "Service", "EnvironmentFile"),
            ["/etc/ipi-net/node.env"],
            "{at}"
        );
        let kind = values(&e, "Service", "Type");
        let expected = match name.as_str() {
            "ipi-dns-render.service" => "oneshot",
            "ipi-dnsmasq.service" => "simple",
            _ => "notify",
        };
        assert_eq!(kind, [expected], "{at}");
        for (key, value) in HARDENING {
            assert_eq!(values(&e, "Service", key), [value], "{at}: {key}");
        }
        // No unit as root: the package's user (sysusers.d), with ambient capabilities only.
        assert_eq!(values(&e, "Service", "User"), ["ipi-net"], "{at}: User=");
        assert_eq!(values(&e, "Service", "Group"), ["ipi-net"], "{at}: Group=");
        let filter = values(&e, "Service", "SystemCallFilter");
        assert_eq!(
            filter.first().map(String::as_str),
            Some("@system-service"),
            "{at}: SystemCallFilter="
        );
        assert_eq!(
            values(&e, "Service", "CapabilityBoundingSet").len(),
            1,
            "{at}: CapabilityBoundingSet="
        );
        let bounding = values(&e, "Service", "CapabilityBoundingSet")[0].clone();
        for ambient in values(&e, "Service", "AmbientCapabilities") {
            for cap in ambient.split_whitespace() {
                assert!(bounding.contains(cap), "{at}: ambient {cap} not bounded");
            }
        }
        assert_eq!(
            bounding.split_whitespace().collect::<Vec<_>>(),
            capabilities(&name),
            "{at}: CapabilityBoundingSet="
        );
        // Restart=on-failure (HARDENING) for the oneshot too: a failed run would wait for the
        // next change of the inventory.
        assert_eq!(values(&e, "Service", "RestartSec").len(), 1, "{at}");
        // What a unit writes must be writable under ProtectSystem=strict.
        let writable = values(&e, "Service", "ReadWritePaths");
        for runtime in values(&e, "Service", "RuntimeDirectory") {
            assert!(
                writable.contains(&format!("/run/{runtime}")),
                "{at}: RuntimeDirectory={runtime} not in ReadWritePaths"
            );
        }
    }
}

#[test]
fn every_exec_start_uses_only_node_env_and_parses_with_its_program() {
    let starts = exec_starts();
    assert_eq!(starts.len(), 6, "{starts:?}");
    for role in ["bootstrap", "master", "worker"] {
        let env = node_env(&contrib().join("examples").join(role).join("node.env"));
        for (name, at, words) in &starts {
            let args: Vec<String> = words.iter().map(|w| expand(w, &env, at)).collect();
            let program = args[0].rsplit('/').next().unwrap().to_string();
            let argv = std::iter::once(program.clone()).chain(args[1..].iter().cloned());
            let parsed = match program.as_str() {
                "vrrpd" => vrrpd::cli::Cli::try_parse_from(argv).map(drop),
                "lb-proxy" => lb_proxy::cli::Cli::try_parse_from(argv).map(drop),
                "mdns-publish" => mdns_publish::cli::Cli::try_parse_from(argv).map(drop),
                "dns-render" => dns_render::cli::Cli::try_parse_from(argv).map(drop),
                "dnsmasq" => {
                    assert!(
                        args.contains(&"--keep-in-foreground".to_string())
                            && args
                                .contains(&"--conf-file=/run/ipi-net/dns/dnsmasq.conf".to_string()),
                        "{at}: {args:?}"
                    );
                    Ok(())
                }
                other => panic!("{at}: {name} runs {other}"),
            };
            if let Err(e) = parsed {
                panic!("{at}: {name} with {role}'s node.env: {args:?}: {e}");
            }
        }
    }
    // The paths of the contract.
    let line = |unit: &str| {
        starts
            .iter()
            .find(|(n, _, _)| n == unit)
            .map(|(_, _, w)| w.join(" "))
            .unwrap()
    };
    for (unit, needle) in [
        ("ipi-vrrpd.service", "--state-dir /run/ipi-net/vrrpd"),
        ("ipi-vrrpd.service", "--scripts-dir /etc/ipi-net/keepalived"),
        (
            "ipi-vrrpd.service",
            "--cluster /etc/ipi-net/install-config.yaml",
        ),
        (
            "ipi-lb-proxy.service",
            "--nodes /run/ipi-net/inventory/nodes",
        ),
        ("ipi-mdns-browse.service", "-o /run/ipi-net/inventory/nodes"),
        ("ipi-mdns-browse.service", "--watch"),
        (
            "ipi-dns-render.service",
            "--nodes /run/ipi-net/inventory/nodes",
        ),
        ("ipi-dns-render.service", "--out-dir /run/ipi-net/dns"),
    ] {
        assert!(line(unit).contains(needle), "{unit}: {needle}");
    }
}

#[test]
fn vrrpd_scripts_dir_names_the_track_scripts_of_contrib() {
    let scripts = contrib().join("keepalived");
    let names: Vec<String> = files(&scripts)
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    for path in files(&scripts) {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "{}: executable", path.display());
    }
    let cluster = contrib().join("examples/install-config.yaml");
    let mut used = Vec::new();
    for role in ["bootstrap", "master", "worker"] {
        let cli = vrrpd::cli::Cli::try_parse_from([
            "vrrpd",
            "render",
            "--cluster",
            cluster.to_str().unwrap(),
            "--role",
            role,
            "--interface",
            "ens3",
            "--scripts-dir",
            "/etc/ipi-net/keepalived",
        ])
        .unwrap();
        let vrrpd::cli::Command::Render { source } = cli.command else {
            panic!("render");
        };
        let config = vrrpd::config::load_source(&source).unwrap();
        assert!(!config.scripts.is_empty(), "{role}");
        for s in &config.scripts {
            let words = &s.command.words;
            let script = words
                .iter()
                .find_map(|w| w.strip_prefix("/etc/ipi-net/keepalived/"))
                .unwrap_or_else(|| panic!("{role} {}: {words:?}", s.name));
            assert!(
                names.iter().any(|n| n == script),
                "{role} {}: {script} is not in contrib/keepalived",
                s.name
            );
            used.push(script.to_string());
        }
    }
    used.sort();
    used.dedup();
    assert_eq!(used, names, "every script of contrib/keepalived is used");
}

fn documentation(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(a) => {
            let [a, b, c, _] = a.octets();
            matches!((a, b, c), (192, 0, 2) | (198, 51, 100) | (203, 0, 113))
        }
        IpAddr::V6(a) => a.segments()[0] == 0x2001 && a.segments()[1] == 0x0db8,
    }
}

#[test]
fn the_examples_are_valid_and_use_documentation_addresses_only() {
    let examples = contrib().join("examples");
    let cluster_file = examples.join("install-config.yaml");
    let cluster = ipi_core::Cluster::load(&cluster_file, None)
        .unwrap_or_else(|e| panic!("{}: {e}", cluster_file.display()));
    for role in ["bootstrap", "master", "worker"] {
        let path = examples.join(role).join("node.env");
        let env = node_env(&path);
        let keys: Vec<&str> = env.keys().map(String::as_str).collect();
        let mut expected = NODE_ENV_VARS.to_vec();
        expected.sort_unstable();
        assert_eq!(keys, expected, "{}", path.display());
        assert_eq!(env["IPI_ROLE"], role, "{}", path.display());
        let ip: IpAddr = env["IPI_NODE_IP"].parse().unwrap();
        assert!(documentation(ip), "{}: {ip}", path.display());
        assert!(
            cluster.machine_networks.iter().any(|n| n.contains(ip)),
            "{}: {ip} outside the example's machine networks",
            path.display()
        );
    }
    // Every address anywhere in contrib/: documentation ranges, loopback or the unspecified.
    let mut stack = vec![contrib()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for word in text.split(|c: char| !(c.is_ascii_hexdigit() || c == '.' || c == ':')) {
                let word = word.trim_matches(|c| c == '.' || c == ':');
                let Ok(address) = word.parse::<IpAddr>() else {
                    continue;
                };
                assert!(
                    documentation(address) || address.is_loopback() || address.is_unspecified(),
                    "{}: {address}",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn the_shell_scripts_are_shellcheck_clean() {
    let mut scripts = files(&contrib().join("keepalived"));
    scripts.extend(files(&contrib().join("NetworkManager/dispatcher.d")));
    // The maintainer scripts of the Debian packages (not their changelog).
    scripts.extend(["postinst", "prerm", "postrm"].map(|s| contrib().join("debian").join(s)));
    // The cluster lab's upstream stack: its render script and haproxy-monitor stand-in.
    let upstream = ipi_net_tests::upstream::dir();
    scripts.extend(["render.sh", "haproxy-monitor.sh"].map(|s| upstream.join(s)));
    // The project's own: the README's two commands, the benchmarks, the packages, the fresh
    // machine's check, and what they share (sourced: -x follows it from each).
    let own = contrib().join("../scripts");
    scripts
        .extend(["demo", "test", "bench", "package", "check-fresh", "lib.sh"].map(|s| own.join(s)));
    assert_eq!(scripts.len(), 15, "{scripts:?}");
    if !ipi_lab::tool("shellcheck", "shellcheck") {
        return;
    }
    let out = Command::new("shellcheck")
        .arg("-x")
        .args(&scripts)
        .current_dir(contrib().join(".."))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Runs the dispatcher hook with `action` on the example master, with a stand-in dns-render that
/// writes its arguments down; returns the hook's exit status and those arguments (empty when it
/// did not run dns-render).
fn dispatch(action: &str, cluster_text: &str) -> (std::process::ExitStatus, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let etc = dir.path().join("etc");
    std::fs::create_dir(&etc).unwrap();
    std::fs::copy(
        contrib().join("examples/master/node.env"),
        etc.join("node.env"),
    )
    .unwrap();
    std::fs::write(etc.join("install-config.yaml"), cluster_text).unwrap();
    let args = dir.path().join("args");
    let stand_in = dir.path().join("dns-render");
    std::fs::write(
        &stand_in,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > {}\n",
            args.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    let status = Command::new(contrib().join("NetworkManager/dispatcher.d/30-ipi-resolv"))
        .args(["ens3", action])
        .env("IPI_NET_ETC", &etc)
        .env("DNS_RENDER", &stand_in)
        .env("NM_RESOLV_CONF", dir.path().join("nm-resolv.conf"))
        .env("RESOLV_CONF", dir.path().join("resolv.conf"))
        .status()
        .unwrap();
    let args = std::fs::read_to_string(&args)
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default();
    (status, args)
}

#[test]
fn the_dispatcher_hook_prepends_this_nodes_dns_with_the_cluster_domain() {
    let cluster_file = contrib().join("examples/install-config.yaml");
    let text = std::fs::read_to_string(&cluster_file).unwrap();
    let domain = ipi_core::Cluster::load(&cluster_file, None)
        .unwrap()
        .domain();
    let node_ip = node_env(&contrib().join("examples/master/node.env"))["IPI_NODE_IP"].clone();
    for action in ["up", "dhcp4-change", "dhcp6-change", "dns-change"] {
        let (status, args) = dispatch(action, &text);
        assert!(status.success(), "{action}: {status}");
        assert_eq!(
            args[..5],
            ["resolv", "--nameserver", &node_ip, "--search", &domain],
            "{action}"
        );
        assert_eq!(args[args.len() - 2], "-o", "{action}: {args:?}");
        assert!(args.contains(&"--in".to_string()), "{action}: {args:?}");
    }
    for action in ["down", "pre-up", "hostname", "connectivity-change"] {
        let (status, args) = dispatch(action, &text);
        assert!(status.success(), "{action}: {status}");
        assert!(args.is_empty(), "{action}: ran dns-render {args:?}");
    }
    // Quotes, comments and other sections do not change the domain.
    let (_, args) = dispatch(
        "up",
        "apiVersion: v1\nbaseDomain: \"example.com\"  # the base\ncontrolPlane:\n  name: master\n\
         metadata:\n  name: 'ocp'\nplatform:\n  none: {}\n",
    );
    assert_eq!(args[4], "ocp.example.com", "{args:?}");
    // No cluster domain: an error, and dns-render is not run.
    let (status, args) = dispatch("up", "apiVersion: v1\nmetadata:\n  name: ocp\n");
    assert_eq!(status.code(), Some(2));
    assert!(args.is_empty(), "{args:?}");
}
