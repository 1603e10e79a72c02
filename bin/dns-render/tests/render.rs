//! dns-render from the fixtures and from made-up clusters: the managed Corefile byte for byte,
//! dual-stack and IPv6-only answers, the other outputs, idempotence, and bad input that names
//! its place and leaves the previous output alone.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_dns-render");

fn seeds(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/seeds")
        .join(name)
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_managed_corefile_byte_for_byte() {
    let (code, out, err) = run(&[
        "corefile",
        "--cluster",
        s(&seeds("managed-install-config.yaml")),
        "--nodes",
        s(&seeds("managed-nodes.kubectl.json")),
        "--resolv",
        s(&seeds("managed-upstream-resolv.conf")),
        "--node-ip",
        "10.0.3.211",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        std::fs::read_to_string(seeds("managed-Corefile")).unwrap()
    );
}

/// A lab cluster: `vips` are (api, ingress) per family.
fn cluster(dir: &Path, networks: &[&str], api: &[&str], ingress: &[&str]) -> PathBuf {
    ipi_lab::install_config(dir, networks, api, ingress)
}

/// The IPv4 lab cluster: 192.0.2.0/24, API VIP .5, Ingress VIP .7.
fn ipv4_cluster(dir: &Path) -> PathBuf {
    cluster(dir, &["192.0.2.0/24"], &["192.0.2.5"], &["192.0.2.7"])
}

fn files(dir: &Path, nodes: &str) -> (PathBuf, PathBuf) {
    let n = dir.join("nodes");
    std::fs::write(&n, nodes).unwrap();
    let r = dir.join("resolv.conf");
    std::fs::write(
        &r,
        "nameserver 127.0.0.53\nnameserver 192.0.2.1\nnameserver 198.51.100.53\n",
    )
    .unwrap();
    (n, r)
}

#[test]
fn dual_stack_answers_both_families_and_single_stack_answers_empty() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(
        dir.path(),
        &["192.0.2.0/24", "2001:db8::/64"],
        &["192.0.2.5", "2001:db8::5"],
        &["192.0.2.7", "2001:db8::7"],
    );
    let (n, r) = files(
        dir.path(),
        "master-0 master 192.0.2.1 2001:db8::1\nworker-0 worker 192.0.2.2\n",
    );
    let (code, out, err) = run(&[
        "corefile",
        "--cluster",
        s(&c),
        "--nodes",
        s(&n),
        "--resolv",
        s(&r),
        "--node-ip",
        "192.0.2.1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("forward . 198.51.100.53 {"), "{out}");
    assert!(out.contains("match api.lab.example.com\n        answer \"{{ .Name }} 60 in {{ .Type }} 2001:db8::5\""), "{out}");
    assert!(out.contains(
        "match .*.apps.lab.example.com\n        answer \"{{ .Name }} 60 in {{ .Type }} 192.0.2.7\""
    ));
    assert!(out.contains("        2001:db8::1 master-0 master-0.lab.example.com\n"));
    assert!(out.contains("        192.0.2.2 worker-0 worker-0.lab.example.com\n"));

    // IPv6 only: A gets an empty answer, AAAA the VIP.
    let c = cluster(
        dir.path(),
        &["2001:db8::/64"],
        &["2001:db8::5"],
        &["2001:db8::7"],
    );
    let (n, r) = files(dir.path(), "master-0 master 2001:db8::1\n");
    let (code, out, err) = run(&[
        "corefile",
        "--cluster",
        s(&c),
        "--nodes",
        s(&n),
        "--resolv",
        s(&r),
        "--node-ip",
        "2001:db8::1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("    template IN A lab.example.com {\n        match api.lab.example.com\n        fallthrough\n"), "{out}");
    assert!(out.contains("    template IN AAAA lab.example.com {\n        match api.lab.example.com\n        answer"), "{out}");
}

#[test]
fn hosts_dnsdata_and_resolv() {
    let dir = tempfile::tempdir().unwrap();
    let c = ipv4_cluster(dir.path());
    let (n, r) = files(
        dir.path(),
        "worker-0 worker 192.0.2.2\nmaster-0 master 192.0.2.1\n",
    );
    let (code, out, _) = run(&["hosts", "--cluster", s(&c), "--nodes", s(&n)]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        lines,
        [
            "192.0.2.5 api.lab.example.com api-int.lab.example.com",
            "192.0.2.1 master-0.lab.example.com master-0",
            "192.0.2.2 worker-0.lab.example.com worker-0"
        ]
    );

    let (code, out, err) = run(&["dnsdata", s(&seeds("dnsdata.yaml"))]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines()
            .any(|l| l == "192.168.122.100 edpm-compute-0.ctlplane"),
        "{out}"
    );
    let ips: Vec<std::net::IpAddr> = out
        .lines()
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    let mut sorted = ips.clone();
    sorted.sort();
    assert_eq!(ips, sorted);

    let (code, out, _) = run(&[
        "resolv",
        "--nameserver",
        "192.0.2.1",
        "--search",
        "lab.example.com",
        "--in",
        s(&r),
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("search lab.example.com\nnameserver 192.0.2.1\nnameserver 127.0.0.53\nnameserver 198.51.100.53\n"), "{out}");
    let (_, out, _) = run(&[
        "resolv",
        "--nameserver",
        "192.0.2.1",
        "--search",
        "lab.example.com",
        "--resolved",
    ]);
    assert!(out.contains("[Resolve]\nDNS=192.0.2.1\nDomains=lab.example.com\n"));
}

#[test]
fn an_unchanged_output_is_left_alone_and_the_exit_status_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let c = ipv4_cluster(dir.path());
    let (n, r) = files(dir.path(), "master-0 master 192.0.2.1\n");
    let out = dir.path().join("Corefile");
    let args = [
        "corefile",
        "--cluster",
        s(&c),
        "--nodes",
        s(&n),
        "--resolv",
        s(&r),
        "--node-ip",
        "192.0.2.1",
        "-o",
        s(&out),
        "--exit-changed",
    ];
    assert_eq!(run(&args).0, 0, "written: changed");
    let mtime = std::fs::metadata(&out).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(run(&args).0, 1, "unchanged");
    assert_eq!(std::fs::metadata(&out).unwrap().modified().unwrap(), mtime);
    // A new node: changed again.
    std::fs::write(&n, "master-0 master 192.0.2.1\nmaster-1 master 192.0.2.3\n").unwrap();
    assert_eq!(run(&args).0, 0);
    assert!(std::fs::read_to_string(&out).unwrap().contains("master-1"));

    // dnsmasq: three files, the config naming the hosts and servers files.
    let d = dir.path().join("dnsmasq");
    std::fs::create_dir(&d).unwrap();
    let (code, _, err) = run(&[
        "dnsmasq",
        "--cluster",
        s(&c),
        "--nodes",
        s(&n),
        "--resolv",
        s(&r),
        "--node-ip",
        "192.0.2.1",
        "--out-dir",
        s(&d),
    ]);
    assert_eq!(code, 0, "{err}");
    let conf = std::fs::read_to_string(d.join("dnsmasq.conf")).unwrap();
    assert!(
        conf.contains(&format!("addn-hosts={}", d.join("hosts").display())),
        "{conf}"
    );
    assert!(
        conf.contains(&format!("servers-file={}", d.join("servers").display())),
        "{conf}"
    );
    assert!(conf.contains("address=/apps.lab.example.com/192.0.2.7\n"));
    let servers = std::fs::read_to_string(d.join("servers")).unwrap();
    assert!(servers.contains("\nserver=198.51.100.53\n"), "{servers}");
    assert!(!conf.contains("server=198.51.100.53"), "{conf}");
}

/// Every output's directory that is not there yet is created (mode 0755, as `install -d`):
/// `--out-dir` of dnsmasq and the parent of every `-o` file.
#[test]
fn missing_output_directories_are_created() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let c = ipv4_cluster(dir.path());
    let (n, r) = files(dir.path(), "master-0 master 192.0.2.1\n");
    let dnsdata = seeds("dnsdata.yaml");
    let base = ["--cluster", s(&c), "--nodes", s(&n)];
    let with_resolv = ["--resolv", s(&r), "--node-ip", "192.0.2.1"];
    let out = |name: &str| dir.path().join("new").join(name).join("out");
    let (corefile, hosts, dnsdata_out, resolv) =
        (out("corefile"), out("hosts"), out("dnsdata"), out("resolv"));
    let out_dir = dir.path().join("run/ipi-net/dns");
    let cases: Vec<(Vec<&str>, &Path)> = vec![
        (
            [
                &["corefile"][..],
                &base,
                &with_resolv,
                &["-o", s(&corefile)],
            ]
            .concat(),
            &corefile,
        ),
        (
            [
                &["dnsmasq"][..],
                &base,
                &with_resolv,
                &["--out-dir", s(&out_dir)],
            ]
            .concat(),
            &out_dir,
        ),
        ([&["hosts"][..], &base, &["-o", s(&hosts)]].concat(), &hosts),
        (
            vec!["dnsdata", s(&dnsdata), "-o", s(&dnsdata_out)],
            &dnsdata_out,
        ),
        (
            vec![
                "resolv",
                "--nameserver",
                "192.0.2.1",
                "--search",
                "lab.example.com",
                "--in",
                s(&r),
                "-o",
                s(&resolv),
            ],
            &resolv,
        ),
    ];
    for (args, written) in cases {
        let (code, _, err) = run(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(written.exists(), "{args:?}: {} missing", written.display());
    }
    assert!(out_dir.join("dnsmasq.conf").is_file() && out_dir.join("hosts").is_file());
    for d in [
        dir.path().join("new/corefile"),
        out_dir.clone(),
        dir.path().join("run"),
    ] {
        let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o755, "{}", d.display());
    }
}

#[test]
fn bad_input_names_its_place_and_keeps_the_previous_output() {
    let dir = tempfile::tempdir().unwrap();
    let c = ipv4_cluster(dir.path());
    let (n, r) = files(dir.path(), "master-0 master 192.0.2.1\n");
    let out = dir.path().join("Corefile");
    let args = |c: &Path, n: &Path, r: &Path| {
        let (code, _, err) = run(&[
            "corefile",
            "--cluster",
            s(c),
            "--nodes",
            s(n),
            "--resolv",
            s(r),
            "--node-ip",
            "192.0.2.1",
            "-o",
            s(&out),
        ]);
        (code, err)
    };
    assert_eq!(args(&c, &n, &r).0, 0);
    let good = std::fs::read_to_string(&out).unwrap();
    let bad = |what: &str, c: &Path, n: &Path, r: &Path, expect: &str| {
        let (code, err) = args(c, n, r);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(err.contains(expect), "{what}: {err}");
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            good,
            "{what}: the output changed"
        );
    };
    let nodes = dir.path().join("bad-nodes");
    std::fs::write(&nodes, "master-0 master 192.0.2.300\n").unwrap();
    bad("a bad address", &c, &nodes, &r, "bad-nodes:1");
    std::fs::write(&nodes, "master_0! master 192.0.2.1\n").unwrap();
    bad("a bad name", &c, &nodes, &r, "bad-nodes:1");
    bad(
        "an unreadable inventory",
        &c,
        &dir.path().join("missing"),
        &r,
        "missing",
    );
    let outside = cluster(
        &dir.path().join("o").tap_mkdir(),
        &["192.0.2.0/24"],
        &["198.51.100.5"],
        &["192.0.2.7"],
    );
    bad(
        "a VIP outside the machine network",
        &outside,
        &n,
        &r,
        "198.51.100.5",
    );
    let unnamed = dir.path().join("unnamed.yaml");
    std::fs::write(
        &unnamed,
        std::fs::read_to_string(&c)
            .unwrap()
            .replace("metadata:\n  name: lab\n", ""),
    )
    .unwrap();
    bad("no cluster name", &unnamed, &n, &r, "metadata.name");
    let resolv = dir.path().join("loop.conf");
    std::fs::write(&resolv, "nameserver 127.0.0.1\nnameserver 192.0.2.1\n").unwrap();
    bad("no upstream left", &c, &n, &resolv, "no upstream");
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}

impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

#[test]
fn a_template_directory_replaces_a_built_in_template() {
    let dir = tempfile::tempdir().unwrap();
    let c = ipv4_cluster(dir.path());
    let (n, _) = files(dir.path(), "master-0 master 192.0.2.1\n");
    let t = dir.path().join("templates").tap_mkdir();
    std::fs::write(
        t.join("hosts"),
        "{% for n in nodes %}{{ n.name }}={{ n.addresses | join(\",\") }}\n{% endfor %}",
    )
    .unwrap();
    let (code, out, err) = run(&[
        "hosts",
        "--cluster",
        s(&c),
        "--nodes",
        s(&n),
        "--templates",
        s(&t),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "master-0=192.0.2.1\n");
    std::fs::write(t.join("hosts"), "{% for n in nodes %}").unwrap();
    let (code, _, err) = run(&[
        "hosts",
        "--cluster",
        s(&c),
        "--nodes",
        s(&n),
        "--templates",
        s(&t),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("template hosts"), "{err}");
}

#[test]
fn watch_renders_again_when_an_input_changes_and_keeps_the_output_on_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let c = ipv4_cluster(dir.path());
    let (n, _) = files(dir.path(), "master-0 master 192.0.2.1\n");
    let out = dir.path().join("hosts");
    let log = dir.path().join("stderr");
    let mut child = Command::new(BIN)
        .args([
            "hosts",
            "--cluster",
            s(&c),
            "--nodes",
            s(&n),
            "-o",
            s(&out),
            "--watch",
        ])
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let read = || std::fs::read_to_string(&out).unwrap_or_default();
    let stderr = || std::fs::read_to_string(&log).unwrap_or_default();
    let wait = |f: &dyn Fn() -> bool| {
        ipi_lab::wait_for(
            std::time::Duration::from_secs(10),
            std::time::Duration::from_millis(50),
            f,
        )
        .is_some()
    };
    assert!(wait(&|| read().contains("master-0")), "{}", stderr());
    let first = read();
    // A broken inventory: the watcher reads it (its error names the file and line) and the
    // output stays as it was.
    std::fs::write(&n, "master-0 master 192.0.2.999\n").unwrap();
    let error = format!(
        "dns-render: {}:1: node \"master-0\": \"192.0.2.999\" is not a valid IP",
        n.display()
    );
    assert!(wait(&|| stderr().contains(&error)), "{}", stderr());
    assert!(
        stderr().contains("(the previous output is kept)"),
        "{}",
        stderr()
    );
    assert_eq!(read(), first);
    // Fixed, with a new node: rendered again.
    std::fs::write(&n, "master-0 master 192.0.2.1\nmaster-1 master 192.0.2.3\n").unwrap();
    assert!(
        wait(&|| read().contains("192.0.2.3 master-1")),
        "{}",
        read()
    );
    assert!(read().contains("192.0.2.1 master-0"), "{}", read());
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn concurrent_renders_never_leave_a_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let c = ipv4_cluster(dir.path());
    let small = dir.path().join("small");
    std::fs::write(&small, "master-0 master 192.0.2.1\n").unwrap();
    let big = dir.path().join("big");
    std::fs::write(
        &big,
        (0..200)
            .map(|i| format!("node-{i} worker 2001:db8::{:x}\n", i + 16))
            .collect::<String>(),
    )
    .unwrap();
    let out = dir.path().join("hosts");
    let render = |nodes: &Path| run(&["hosts", "--cluster", s(&c), "--nodes", s(nodes)]).1;
    let (a, b) = (render(&small), render(&big));
    let children: Vec<std::process::Child> = (0..16)
        .map(|i| {
            Command::new(BIN)
                .args([
                    "hosts",
                    "--cluster",
                    s(&c),
                    "--nodes",
                    s(if i % 2 == 0 { &small } else { &big }),
                    "-o",
                    s(&out),
                ])
                .spawn()
                .unwrap()
        })
        .collect();
    let mut reads = 0;
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_millis(500) {
        if let Ok(text) = std::fs::read_to_string(&out) {
            assert!(
                text == a || text == b,
                "a partial file: {} bytes",
                text.len()
            );
            reads += 1;
        }
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let last = std::fs::read_to_string(&out).unwrap();
    assert!(last == a || last == b);
    assert!(reads > 0);
}
