//! What dns-render writes, served by a real dnsmasq in the lab and asked with dig from another
//! host: api, api-int, any name under apps, every node, AAAA per family (an empty answer where
//! the cluster has no VIP of that family), and a name outside the cluster that a second
//! dnsmasq, the upstream, answers. Then the inventory and the upstream servers change: rendered
//! again with `--reload-pid` (SIGHUP to dnsmasq), dnsmasq answers the new nodes through the new
//! upstream.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use ipi_lab::{wait_for, Host, Lab};

const BIN: &str = env!("CARGO_BIN_EXE_dns-render");

fn dig(client: &Host, server: &Host, name: &str, kind: &str) -> Vec<String> {
    let at = format!("@{}", server.ipv4());
    let out = client
        .run(
            "dig",
            [at.as_str(), name, kind, "+short", "+tries=1", "+time=2"],
        )
        .unwrap();
    // dig +short says why on stdout too (";; communications error ..."): answers only.
    out.stdout
        .lines()
        .filter(|l| !l.starts_with(';') && !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// dig's full answer to `name`/`kind`: it must have come (dig exits 0 only on a reply).
fn dig_reply(client: &Host, server: &Host, name: &str, kind: &str) -> String {
    let at = format!("@{}", server.ipv4());
    let out = client
        .run("dig", [at.as_str(), name, kind, "+tries=1", "+time=2"])
        .unwrap();
    assert!(out.success, "no reply to {name} {kind}:\n{}", out.stdout);
    out.stdout
}

#[test]
#[allow(clippy::too_many_lines)] // one lab: render, serve, change, serve again
fn dnsmasq_serves_what_dns_render_writes() {
    if !ipi_lab::available()
        || !ipi_lab::tool("dnsmasq", "dnsmasq-base")
        || !ipi_lab::tool("dig", "bind9-dnsutils")
    {
        return;
    }
    let mut lab = Lab::new().unwrap();
    let (dns, upstream, client) = (
        lab.host("dns").unwrap(),
        lab.host("upstream").unwrap(),
        lab.host("client").unwrap(),
    );
    // The upstream answers one name outside the cluster.
    let up = upstream
        .spawn(
            "upstream-dnsmasq",
            "dnsmasq",
            [
                "--keep-in-foreground",
                "--no-resolv",
                "--no-hosts",
                "--conf-file=/dev/null",
                "--address=/outside.example.org/198.51.100.77",
                &format!("--listen-address={}", upstream.ipv4()),
                "--bind-interfaces",
            ],
        )
        .unwrap();
    wait_for(Duration::from_secs(10), Duration::from_millis(100), || {
        dig(&client, &upstream, "outside.example.org", "A") == ["198.51.100.77"]
    })
    .unwrap_or_else(|| panic!("the upstream dnsmasq does not answer:\n{}", up.log()));
    let dir = dns.dir();
    let cluster = ipi_lab::install_config(
        dir,
        &["192.0.2.0/24", "2001:db8::/64"],
        &["192.0.2.100", "2001:db8::100"],
        &["192.0.2.101"],
    );
    let nodes = dir.join("nodes");
    std::fs::write(
        &nodes,
        "master-0 master 192.0.2.10 2001:db8::10\nworker-0 worker 192.0.2.20\n",
    )
    .unwrap();
    let resolv = dir.join("resolv.conf");
    std::fs::write(
        &resolv,
        format!("nameserver 127.0.0.1\nnameserver {}\n", upstream.ipv4()),
    )
    .unwrap();
    let out = dir.join("dnsmasq");
    std::fs::create_dir_all(&out).unwrap();
    let listen = dns.ipv4().to_string();
    // On the node itself: its own addresses are found and left out of the upstreams.
    let render_args = [
        "dnsmasq",
        "--cluster",
        cluster.to_str().unwrap(),
        "--nodes",
        nodes.to_str().unwrap(),
        "--resolv",
        resolv.to_str().unwrap(),
        "--out-dir",
        out.to_str().unwrap(),
        "--listen",
        &listen,
    ];
    let rendered = dns.command(BIN, render_args.iter()).output().unwrap();
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let conf = format!("--conf-file={}", out.join("dnsmasq.conf").display());
    let pid_file = dir.join("dnsmasq.pid");
    let pid_arg = format!("--pid-file={}", pid_file.display());
    let d = dns
        .spawn(
            "dnsmasq",
            "dnsmasq",
            ["--keep-in-foreground", conf.as_str(), pid_arg.as_str()],
        )
        .unwrap();
    wait_for(Duration::from_secs(10), Duration::from_millis(100), || {
        !dig(&client, &dns, "api.lab.example.com", "A").is_empty()
    })
    .unwrap_or_else(|| panic!("dnsmasq does not answer:\n{}\n{}", d.log(), up.log()));

    assert_eq!(
        dig(&client, &dns, "api.lab.example.com", "A"),
        ["192.0.2.100"]
    );
    assert_eq!(
        dig(&client, &dns, "api-int.lab.example.com", "A"),
        ["192.0.2.100"]
    );
    assert_eq!(
        dig(&client, &dns, "api.lab.example.com", "AAAA"),
        ["2001:db8::100"]
    );
    assert_eq!(
        dig(&client, &dns, "console-openshift.apps.lab.example.com", "A"),
        ["192.0.2.101"]
    );
    assert_eq!(
        dig(&client, &dns, "x.apps.lab.example.com", "A"),
        ["192.0.2.101"]
    );
    // No IPv6 Ingress VIP: an empty answer (a reply, NOERROR with no records), not another
    // address.
    let reply = dig_reply(&client, &dns, "x.apps.lab.example.com", "AAAA");
    assert!(
        reply.contains("status: NOERROR") && reply.contains("ANSWER: 0,"),
        "{reply}"
    );
    assert_eq!(
        dig(&client, &dns, "master-0.lab.example.com", "A"),
        ["192.0.2.10"]
    );
    assert_eq!(
        dig(&client, &dns, "master-0.lab.example.com", "AAAA"),
        ["2001:db8::10"]
    );
    assert_eq!(
        dig(&client, &dns, "worker-0.lab.example.com", "A"),
        ["192.0.2.20"]
    );
    assert_eq!(
        dig(&client, &dns, "outside.example.org", "A"),
        ["198.51.100.77"],
        "forwarded upstream"
    );

    // The inventory and the upstream servers change: rendered again with --reload-pid, as
    // ipi-dns-render.service runs it, dnsmasq takes both on the SIGHUP, with no restart.
    let up2 = lab.host("upstream2").unwrap();
    let _up2 = up2
        .spawn(
            "upstream2-dnsmasq",
            "dnsmasq",
            [
                "--keep-in-foreground",
                "--no-resolv",
                "--no-hosts",
                "--conf-file=/dev/null",
                "--address=/outside.example.org/198.51.100.78",
                &format!("--listen-address={}", up2.ipv4()),
                "--bind-interfaces",
            ],
        )
        .unwrap();
    std::fs::write(
        &nodes,
        "master-0 master 192.0.2.10\nworker-1 worker 192.0.2.21\n",
    )
    .unwrap();
    std::fs::write(&resolv, format!("nameserver {}\n", up2.ipv4())).unwrap();
    let again = dns
        .command(BIN, render_args.iter())
        .args(["--reload-pid", pid_file.to_str().unwrap()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(
        again.status.success() && said.contains("SIGHUP to"),
        "{said}"
    );
    let now = || {
        (
            dig(&client, &dns, "worker-0.lab.example.com", "A"),
            dig(&client, &dns, "worker-1.lab.example.com", "A"),
            dig(&client, &dns, "outside.example.org", "A"),
        )
    };
    let want = (
        vec![],
        vec!["192.0.2.21".to_owned()],
        vec!["198.51.100.78".to_owned()],
    );
    let seen = wait_for(Duration::from_secs(10), Duration::from_millis(100), || {
        now() == want
    });
    assert!(seen.is_some(), "after SIGHUP: {:?}\n{}", now(), d.log());
}
