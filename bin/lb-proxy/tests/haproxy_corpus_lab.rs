//! Files of the haproxy.cfg corpus (`tests/fixtures/haproxy-corpus`) run by haproxy and by
//! lb-proxy side by side in the lab, each proxy in a host of its own, both balancing over the
//! same stand-in API servers (hosts s0, s1, s2): a client in each proxy's host sees the same
//! rotation over the servers, and the same servers leave and rejoin it when they fail and
//! pass their `http-check` or `tcp-check` expectations again.
//!
//! A corpus file is run as it is but for its addresses, which become the lab servers' (and
//! kubeadm's `# [...]` placeholder, which becomes the two further servers it stands for).

#![allow(clippy::unwrap_used)]

mod support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ipi_lab::api::ApiServer;
use ipi_lab::{wait_for, Daemon, Host, Lab};

/// Which program runs a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Haproxy,
    LbProxy,
}

const KINDS: [Kind; 2] = [Kind::Haproxy, Kind::LbProxy];

/// The servers and a proxy host for each program.
struct Bench {
    _lab: Lab,
    servers: Vec<Host>,
    proxies: Vec<(Kind, Host)>,
}

fn bench() -> Bench {
    let mut lab = Lab::new().unwrap();
    let servers = (0..3)
        .map(|i| lab.host(&format!("s{i}")).unwrap())
        .collect();
    let proxies = KINDS
        .iter()
        .map(|k| (*k, lab.host(&format!("{k:?}").to_lowercase()).unwrap()))
        .collect();
    Bench {
        _lab: lab,
        servers,
        proxies,
    }
}

impl Bench {
    /// A stand-in API server named `sN` on each server host, on `port`.
    fn serve(&self, port: u16) -> Vec<ApiServer> {
        (self.servers.iter().enumerate())
            .map(|(i, h)| {
                let at = SocketAddr::new(IpAddr::V4(h.ipv4()), port);
                ApiServer::start_in(h, at, &format!("s{i}")).unwrap()
            })
            .collect()
    }

    /// Runs `text` under both programs, each in its host; started once `port` answers there.
    fn start(&self, text: &str, port: u16) -> Vec<(Kind, Daemon)> {
        (self.proxies.iter())
            .map(|(kind, host)| {
                let path = host.dir().join("haproxy.cfg");
                std::fs::write(&path, text).unwrap();
                let path = path.to_str().unwrap();
                let daemon = match kind {
                    Kind::Haproxy => host.spawn("haproxy", "haproxy", ["-db", "-f", path]),
                    Kind::LbProxy => host.spawn(
                        "lb-proxy",
                        env!("CARGO_BIN_EXE_lb-proxy"),
                        ["run", "-f", path],
                    ),
                }
                .unwrap();
                let front = SocketAddr::from(([127, 0, 0, 1], port));
                let up = wait_for(Duration::from_secs(20), Duration::from_millis(50), || {
                    host.within(|| std::net::TcpStream::connect(front)).is_ok()
                });
                assert!(up.is_some(), "{kind:?} did not start:\n{}", daemon.log());
                (*kind, daemon)
            })
            .collect()
    }

    /// The servers that answer `n` requests through `port` of each proxy, in order.
    fn rotations(&self, port: u16, n: usize) -> Vec<(Kind, Vec<String>)> {
        (self.proxies.iter())
            .map(|(kind, host)| (*kind, names(host, port, n)))
            .collect()
    }

    /// Waits until every proxy's rotation over `n` requests on `port` passes `ok`.
    fn wait_for_rotation(&self, what: &str, port: u16, n: usize, ok: impl Fn(&[String]) -> bool) {
        for (kind, host) in &self.proxies {
            let seen = wait_for(Duration::from_secs(60), Duration::from_millis(100), || {
                ok(&names(host, port, n))
            });
            assert!(
                seen.is_some(),
                "{kind:?}: {what}: last rotation {:?}",
                names(host, port, n)
            );
            eprintln!("{kind:?}: {what} after {seen:?}");
        }
    }

    /// `text` with the corpus file's addresses `from` replaced by the servers'.
    fn addresses(&self, text: &str, from: &[&str]) -> String {
        let mut out = text.to_string();
        for (old, host) in from.iter().zip(&self.servers) {
            out = out.replace(old, &host.ipv4().to_string());
        }
        out
    }
}

/// The names `n` requests through 127.0.0.1:`port` in `host` got (`-` for no answer), each
/// sent once the proxy has let go of the one before.
fn names(host: &Host, port: u16, n: usize) -> Vec<String> {
    names_beside(host, port, n, 0)
}

/// [`names`] beside `open` connections the client holds open through the proxy.
fn names_beside(host: &Host, port: u16, n: usize, open: usize) -> Vec<String> {
    let front = SocketAddr::from(([127, 0, 0, 1], port));
    (0..n)
        .map(|_| {
            settle(host, port, open);
            host.within(|| support::request(front, "/", "Connection: close\r\n"))
                .map_or_else(|_| "-".to_string(), |(_, body)| body.trim().to_string())
        })
        .collect()
}

/// Waits until the proxy in `host` holds no connection from or to `port` but the `open` ones
/// the client keeps (two sockets each: the client's side and the server's). A proxy counts a
/// session against its server (for `leastconn`) until it has closed both of its sockets, which
/// can be after the client has read the whole answer: without this wait a loaded machine
/// showed haproxy a server still busy with the request before.
fn settle(host: &Host, port: u16, open: usize) {
    let filter = format!("( sport = :{port} or dport = :{port} )");
    let ours = format!("pid={},", std::process::id());
    let held = || {
        let out = host
            .run("ss", ["-Htnp", "state", "connected", &filter])
            .unwrap();
        (out.stdout.lines())
            .filter(|l| l.contains("users:") && !l.contains(&ours))
            .count()
    };
    let idle = wait_for(Duration::from_secs(10), Duration::from_millis(5), || {
        held() <= 2 * open
    });
    assert!(
        idle.is_some(),
        "{}: the proxy holds {} sockets on :{port}",
        host.name(),
        held()
    );
}

fn corpus(name: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(dir.join("../../tests/fixtures/haproxy-corpus").join(name)).unwrap()
}

/// A TCP configuration of the tests below: defaults that give a check 3 s to connect and
/// get its answer (a loaded machine), then `sections`.
fn checked(sections: &str) -> String {
    format!(
        "defaults\n  mode tcp\n  timeout connect 3s\n  timeout client 10s\n  \
         timeout server 10s\n  timeout check 3s\n{sections}"
    )
}

fn can_run() -> bool {
    ipi_lab::available() && ipi_lab::tool("haproxy", "haproxy")
}

/// RKE2's documented load balancer (two frontends, `option tcp-check`, `default-server inter
/// 10s downinter 5s`): the same round robin on both ports.
#[test]
fn rke2s_file_rotates_as_haproxy_does() {
    if !can_run() {
        return;
    }
    let b = bench();
    let (_api, _supervisor) = (b.serve(6443), b.serve(9345));
    let text = b.addresses(
        &corpus("rke2-docs-cluster-loadbalancer.cfg"),
        &["10.10.10.50", "10.10.10.51", "10.10.10.52"],
    );
    let _running = b.start(&text, 6443);
    for port in [6443, 9345] {
        let seen = b.rotations(port, 6);
        eprintln!("port {port}: {seen:?}");
        assert_eq!(seen[0].1, seen[1].1, "port {port}: the same rotation");
        for s in ["s0", "s1", "s2"] {
            let count = seen[1].1.iter().filter(|n| *n == s).count();
            assert_eq!(count, 2, "port {port}: {s} in {:?}", seen[1].1);
        }
    }
}

/// kubeadm's HA guide (`http-check connect ssl`, `http-check send meth GET uri /healthz`,
/// `http-check expect status 200`): a server whose /healthz says 503 leaves both rotations,
/// and rejoins both when it says 200 again.
#[test]
fn kubeadms_http_check_expect_decides_as_haproxy_does() {
    if !can_run() {
        return;
    }
    let b = bench();
    let api = b.serve(6443);
    let more = format!(
        "    server cp2 {}:6443 check verify none\n    server cp3 {}:6443 check verify none",
        b.servers[1].ipv4(),
        b.servers[2].ipv4()
    );
    let text = b
        .addresses(&corpus("kubeadm-ha-considerations.cfg"), &["192.0.2.11"])
        .replace("    # [...]", &more);
    let _running = b.start(&text, 6443);
    let seen = b.rotations(6443, 6);
    assert_eq!(seen[0].1, seen[1].1, "the same rotation");

    api[1].set_ready(false);
    b.wait_for_rotation("s1 out", 6443, 6, |r| {
        !r.iter().any(|n| n == "s1") && r.iter().all(|n| n == "s0" || n == "s2")
    });
    api[1].set_ready(true);
    b.wait_for_rotation("s1 back", 6443, 6, |r| {
        ["s0", "s1", "s2"]
            .iter()
            .all(|s| r.iter().filter(|n| n == s).count() == 2)
    });
}

/// `option tcp-check` with `send` and `expect rstring` (a rule list none of the corpus files
/// has beyond connect, so written here): an HTTP health request over the raw connection,
/// the status line matched; the server that answers 503 leaves both rotations.
#[test]
fn tcp_check_expect_decides_as_haproxy_does() {
    if !can_run() {
        return;
    }
    let b = bench();
    let api = b.serve(6443);
    let mut text = checked(
        "frontend kubernetes\n  bind :7443\n  default_backend kubernetes\n\
         backend kubernetes\n  option tcp-check\n  tcp-check connect\n  \
         tcp-check send \"GET /healthz HTTP/1.0\\r\\nConnection: close\\r\\n\\r\\n\"\n  \
         tcp-check expect rstring ^HTTP/1\\.[01]\\ 200\n  \
         default-server inter 200ms fall 2 rise 2\n",
    );
    for (i, h) in b.servers.iter().enumerate() {
        text.push_str(&format!("  server s{i} {}:6443 check\n", h.ipv4()));
    }
    let _running = b.start(&text, 7443);
    let seen = b.rotations(7443, 6);
    assert_eq!(seen[0].1, seen[1].1, "the same rotation");
    api[2].set_ready(false);
    b.wait_for_rotation("s2 out", 7443, 6, |r| {
        r.iter().all(|n| n == "s0" || n == "s1")
    });
    api[2].set_ready(true);
    b.wait_for_rotation("s2 back", 7443, 6, |r| r.iter().any(|n| n == "s2"));
}

/// kubespray's load balancer (`balance leastconn`, `option httpchk GET /healthz`,
/// `http-check expect status 200`, `check check-ssl verify none`): one request after another,
/// every server idle, the same turns as haproxy's; with a connection held open on one server,
/// the next requests go to the others.
#[test]
fn kubesprays_leastconn_picks_as_haproxy_does() {
    if !can_run() {
        return;
    }
    let b = bench();
    let _api = b.serve(6443);
    let text = b.addresses(
        &corpus("kubespray-loadbalancer.cfg"),
        &["192.0.2.11", "192.0.2.12", "192.0.2.13"],
    );
    let _running = b.start(&text, 6443);
    let seen = b.rotations(6443, 6);
    eprintln!("{seen:?}");
    assert_eq!(seen[0].1, seen[1].1, "the same turns");
    for (kind, host) in &b.proxies {
        // A connection that stays open: its server is the busiest from now on.
        let front = SocketAddr::from(([127, 0, 0, 1], 6443));
        let held = host
            .within(|| {
                use std::io::{BufRead, Write};
                let mut s = std::net::TcpStream::connect(front)?;
                s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")?;
                let mut r = std::io::BufReader::new(s.try_clone()?);
                let mut line = String::new();
                while r.read_line(&mut line)? > 2 {
                    line.clear();
                }
                let mut name = String::new();
                r.read_line(&mut name)?;
                Ok((s, name.trim().to_string()))
            })
            .unwrap();
        let after = names_beside(host, 6443, 4, 1);
        assert!(
            after.iter().all(|n| *n != held.1),
            "{kind:?}: {} holds a connection, yet got one of {after:?}",
            held.1
        );
    }
}

/// A server written with a name and `resolvers` (cluster-api's and kind's way, with a
/// nameserver on 127.0.0.11 as Docker's): both proxies follow the DNS when the name moves
/// from s0 to s1 (dnsmasq in each proxy's host, its hosts file rewritten and reloaded).
#[test]
fn server_names_follow_the_dns_as_haproxy_does() {
    if !can_run() || !ipi_lab::tool("dnsmasq", "dnsmasq-base") {
        return;
    }
    let b = bench();
    let _api = b.serve(6443);
    let text = "resolvers dns\n  nameserver ns 127.0.0.11:53\n  hold valid 1s\n  \
                timeout resolve 1s\n  timeout retry 1s\n\
                defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 10s\n  \
                timeout server 10s\n  default-server init-addr none\n\
                frontend control-plane\n  bind *:6443\n  default_backend kube-apiservers\n\
                backend kube-apiservers\n  \
                server api api.lab.test:6443 check inter 500ms resolvers dns resolve-prefer ipv4\n";
    let point = |host: &Host, to: &Host| {
        let hosts = host.dir().join("dns-hosts");
        std::fs::write(&hosts, format!("{} api.lab.test\n", to.ipv4())).unwrap();
        hosts
    };
    let dns: Vec<Daemon> = (b.proxies.iter())
        .map(|(_, host)| {
            let hosts = point(host, &b.servers[0]);
            let args = [
                "--no-daemon",
                "--no-resolv",
                "--no-hosts",
                "--bind-interfaces",
                "--listen-address=127.0.0.11",
                "--user=root",
                &format!("--addn-hosts={}", hosts.display()),
            ];
            host.spawn("dnsmasq", "dnsmasq", args).unwrap()
        })
        .collect();
    let _running = b.start(text, 6443);
    b.wait_for_rotation("the name on s0", 6443, 3, |r| r.iter().all(|n| n == "s0"));
    for ((_, host), d) in b.proxies.iter().zip(&dns) {
        point(host, &b.servers[1]);
        d.signal(nix::sys::signal::Signal::SIGHUP).unwrap();
    }
    b.wait_for_rotation("the name on s1", 6443, 3, |r| r.iter().all(|n| n == "s1"));
}

/// `option ssl-hello-chk` (as the Kubernetes guides that use it write it): the API servers,
/// which speak TLS, pass; a server on the same port that answers in plain text fails, under
/// both proxies.
#[test]
fn ssl_hello_chk_decides_as_haproxy_does() {
    if !can_run() {
        return;
    }
    let b = bench();
    let at = |i: usize| SocketAddr::new(IpAddr::V4(b.servers[i].ipv4()), 6443);
    let _api: Vec<ApiServer> = (0..2)
        .map(|i| ApiServer::start_in(&b.servers[i], at(i), &format!("s{i}")).unwrap())
        .collect();
    // s2 speaks HTTP only: whatever it gets, a plain-text answer.
    let plain = b.servers[2]
        .within(|| std::net::TcpListener::bind(at(2)))
        .unwrap();
    std::thread::spawn(move || {
        for conn in plain.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut buf = [0; 1024];
                let _ = conn.read(&mut buf);
                let _ =
                    conn.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\ns2\n");
            });
        }
    });
    let mut text = checked(
        "frontend kubernetes\n  bind :6443\n  default_backend kubernetes\n\
         backend kubernetes\n  option ssl-hello-chk\n  balance roundrobin\n",
    );
    for i in 0..3 {
        text.push_str(&format!(
            "  server s{i} {} check inter 200ms fall 2 rise 2\n",
            at(i)
        ));
    }
    let _running = b.start(&text, 6443);
    b.wait_for_rotation("s2 out, s0 and s1 in", 6443, 4, |r| {
        r.iter().filter(|n| *n == "s0").count() == 2 && r.iter().filter(|n| *n == "s1").count() == 2
    });
}

/// A `backup` server (the bootstrap node of the OKD/OpenShift UPI guides): no connection while
/// another server passes its checks, every connection once none does, under both proxies.
#[test]
fn a_backup_server_takes_over_as_haproxy_does() {
    if !can_run() {
        return;
    }
    let b = bench();
    let api = b.serve(6443);
    let mut text = checked(
        "frontend api\n  bind :6443\n  default_backend api\n\
         backend api\n  option httpchk GET /readyz\n  balance roundrobin\n",
    );
    for (i, h) in b.servers.iter().enumerate() {
        let backup = if i == 2 { " backup" } else { "" };
        text.push_str(&format!(
            "  server s{i} {}:6443 check check-ssl verify none inter 200ms fall 2 rise 2{backup}\n",
            h.ipv4()
        ));
    }
    let _running = b.start(&text, 6443);
    let seen = b.rotations(6443, 4);
    assert_eq!(seen[0].1, seen[1].1, "the same rotation");
    assert!(seen[1].1.iter().all(|n| n != "s2"), "{seen:?}");
    api[0].set_ready(false);
    api[1].set_ready(false);
    b.wait_for_rotation("the backup alone", 6443, 3, |r| r.iter().all(|n| n == "s2"));
    api[0].set_ready(true);
    b.wait_for_rotation("s0 back, the backup out", 6443, 3, |r| {
        r.iter().all(|n| n == "s0")
    });
}

/// The server that answers a request through 127.0.0.1:`port` in `host` from the client
/// address `from` (any 127.0.0.0/8 address is the host's own), `-` for none.
fn from_address(host: &Host, port: u16, from: std::net::Ipv4Addr) -> String {
    use std::io::{Read, Write};
    host.within(|| {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        s.bind(&SocketAddr::from((from, 0)).into())?;
        s.connect_timeout(
            &SocketAddr::from(([127, 0, 0, 1], port)).into(),
            Duration::from_secs(5),
        )?;
        let mut s = std::net::TcpStream::from(s);
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.write_all(b"GET / HTTP/1.0\r\nConnection: close\r\n\r\n")?;
        let mut answer = String::new();
        s.read_to_string(&mut answer)?;
        Ok(answer
            .split_once("\r\n\r\n")
            .map_or("-", |(_, body)| body.trim())
            .to_string())
    })
    .unwrap_or_else(|_| "-".to_string())
}

/// The server each of 40 client addresses (127.0.0.2 to .41) reaches through `port` of the
/// proxy in `host`.
fn by_source(host: &Host, port: u16) -> Vec<String> {
    (2..42)
        .map(|n| from_address(host, port, std::net::Ipv4Addr::new(127, 0, 0, n)))
        .collect()
}

/// `balance source` as the OKD install guides' ingress backends have it
/// (`okd4.14-install.cfg`, `listen ingress-router-443`: `mode tcp`, `balance source`,
/// `check inter 1s`): each of 40 client addresses reaches the same server every time, the
/// server haproxy sends it to; when a server goes down, every client goes where haproxy's
/// map sends it then.
#[test]
fn balance_source_sends_each_client_where_haproxy_does() {
    if !can_run() {
        return;
    }
    let b = bench();
    let mut api = b.serve(8443);
    let mut text =
        checked("listen ingress-router-443\n  bind :8443\n  mode tcp\n  balance source\n");
    for (i, h) in b.servers.iter().enumerate() {
        text.push_str(&format!(
            "  server worker{} {}:8443 check inter 1s\n",
            i + 1,
            h.ipv4()
        ));
    }
    let _running = b.start(&text, 8443);
    let compare = |what: &str| {
        let seen: Vec<(Kind, Vec<String>)> = (b.proxies.iter())
            .map(|(kind, host)| {
                let first = by_source(host, 8443);
                assert_eq!(
                    first,
                    by_source(host, 8443),
                    "{kind:?}: {what}: a client moved"
                );
                (*kind, first)
            })
            .collect();
        eprintln!("{what}: {seen:?}");
        assert_eq!(
            seen[0].1, seen[1].1,
            "{what}: each client where haproxy sends it"
        );
        seen[1].1.clone()
    };
    let all = compare("three servers");
    for s in ["s0", "s1", "s2"] {
        assert!(all.iter().any(|n| n == s), "{s} got no client: {all:?}");
    }
    // Down once its check fails (a refused connect: fall 3, inter 1 s); until then the
    // clients it had are refused, with haproxy as with lb-proxy (the map keeps a server UP).
    api[1].stop();
    for (kind, host) in &b.proxies {
        let down = wait_for(Duration::from_secs(30), Duration::from_millis(200), || {
            by_source(host, 8443).iter().all(|n| n == "s0" || n == "s2")
        });
        assert!(down.is_some(), "{kind:?}: s1 never left the map");
    }
    let two = compare("s1 down");
    assert!(two.iter().all(|n| n == "s0" || n == "s2"), "{two:?}");
}

/// `balance source` over weights 1, 2 and 3 (a map of 96 slots in haproxy's order, or a ring
/// of 96 points), map-based and consistent, plain and with `avalanche`: each client where
/// haproxy sends it.
#[test]
fn weighted_and_avalanche_source_hashing_picks_as_haproxy_does() {
    if !can_run() {
        return;
    }
    let b = bench();
    let _api = b.serve(8443);
    // A port each: the first pair may still hold theirs while they stop.
    for (port, hash) in [
        (8444, ""),
        (8445, "  hash-type map-based sdbm avalanche\n"),
        (8446, "  hash-type consistent\n"),
        (8447, "  hash-type consistent sdbm avalanche\n"),
    ] {
        let mut text = checked(&format!(
            "listen ingress\n  bind :{port}\n  mode tcp\n  balance source\n{hash}"
        ));
        for (i, h) in b.servers.iter().enumerate() {
            text.push_str(&format!(
                "  server s{i} {}:8443 weight {}\n",
                h.ipv4(),
                i + 1
            ));
        }
        let running = b.start(&text, port);
        let seen: Vec<Vec<String>> = (b.proxies.iter())
            .map(|(_, host)| by_source(host, port))
            .collect();
        eprintln!("{hash:?}: {seen:?}");
        assert_eq!(
            seen[0], seen[1],
            "{hash:?}: each client where haproxy sends it"
        );
        assert!(seen[0].iter().all(|n| n != "-"), "{seen:?}");
        drop(running);
    }
}

/// The server that answers `GET /` over TLS with server name `sni` through 127.0.0.1:`port`
/// in `host` (the stand-in API servers speak TLS), `-` for none.
fn over_tls(host: &Host, port: u16, sni: &str) -> String {
    let to = SocketAddr::from(([127, 0, 0, 1], port));
    host.within(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let conn = lb_proxy::http::connect(to, Some(sni))
                .await
                .map_err(std::io::Error::other)?;
            let head = "GET / HTTP/1.0\r\nConnection: close\r\n\r\n";
            let answer = tokio::time::timeout(
                Duration::from_secs(10),
                lb_proxy::http::ask(conn, head, true),
            )
            .await?
            .map_err(std::io::Error::other)?;
            Ok(String::from_utf8_lossy(&answer.body).trim().to_string())
        })
    })
    .unwrap_or_else(|_| "-".to_string())
}

/// Routing TLS by server name in `mode tcp`, as the OKD and OpenShift UPI guides write it
/// (`tcp-request inspect-delay`, `tcp-request content accept if { req_ssl_hello_type 1 }`, a
/// named `acl` with `-i`, an inline `req.ssl_sni -m end`, a default backend): each name
/// reaches the backend haproxy sends it to, and a plain (not TLS) request the default.
#[test]
fn server_names_route_to_backends_as_haproxy_does() {
    if !can_run() {
        return;
    }
    let b = bench();
    let _api = b.serve(8443);
    let [s0, s1, s2] = [0, 1, 2].map(|i| b.servers[i].ipv4());
    let text = checked(&format!(
        "frontend ingress-https\n  bind :9443\n  tcp-request inspect-delay 5s\n  \
         tcp-request content accept if {{ req_ssl_hello_type 1 }}\n  \
         acl is_api req_ssl_sni -i api.example.com\n  use_backend api if is_api\n  \
         use_backend apps if {{ req.ssl_sni -m end .apps.example.com }}\n  \
         default_backend other\n\
         backend api\n  server s0 {s0}:8443\nbackend apps\n  server s1 {s1}:8443\n\
         backend other\n  server s2 {s2}:8443\n"
    ));
    let _running = b.start(&text, 9443);
    for (kind, host) in &b.proxies {
        for (name, want) in [
            ("api.example.com", "s0"),
            ("API.Example.COM", "s0"),
            ("console-openshift-console.apps.example.com", "s1"),
            ("api.example.org", "s2"),
        ] {
            assert_eq!(over_tls(host, 9443, name), want, "{kind:?}: {name}");
        }
        assert_eq!(names(host, 9443, 1), ["s2"], "{kind:?}: a plain request");
    }
}
