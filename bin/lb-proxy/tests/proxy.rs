//! lb-proxy run on loopback against stand-in API servers: round robin, health checks,
//! failover under load, slow start, reload under load, maxconn, timeouts and half-close, the
//! monitor URI and the stats.

#![allow(clippy::unwrap_used)]

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use support::{backends, config, get, status, Kind, Load, Ports, Proxy};

const CHECKS: &str = "inter 200ms fall 2 rise 2";

fn until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) -> Duration {
    ipi_lab::wait_for(timeout, Duration::from_millis(20), &mut f)
        .unwrap_or_else(|| panic!("timed out waiting for {what}"))
}

/// Whether `server`'s health counter is at its top: it takes `fall` failed checks to go DOWN.
/// A server starts just UP, where one failed check is enough (as in haproxy).
fn fully_up(ports: Ports, server: &str) -> bool {
    let s = support::stats(ports);
    s["backends"][0]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == server)
        .is_some_and(|v| v["health"] == v["health_max"])
}

fn names(front: SocketAddr, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| get(front, "/").unwrap().1.trim().to_string())
        .collect()
}

#[test]
fn round_robin_over_servers_that_pass_their_checks() {
    let b = backends(3);
    let ports = Ports::new();
    let cfg = config(ports, &b.iter().collect::<Vec<_>>(), "", CHECKS);
    let _p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    let seen = names(ports.front(), 9);
    for n in ["a", "b", "c"] {
        assert_eq!(seen.iter().filter(|s| *s == n).count(), 3, "{seen:?}");
    }
    // The checks are /readyz over TLS.
    until("checks", Duration::from_secs(5), || {
        b.iter().all(|s| s.readyz_requests() >= 2)
    });

    // A server that fails /readyz twice is DOWN and gets nothing; the monitor still says 200.
    b[1].set_ready(false);
    until("m1 DOWN", Duration::from_secs(5), || {
        status(ports, "m1") == "DOWN"
    });
    let mut seen = names(ports.front(), 6);
    seen.sort();
    assert_eq!(seen, ["a", "a", "a", "c", "c", "c"]);
    let monitor = ports.monitor();
    assert_eq!(get(monitor, "/haproxy_ready").unwrap().0, 200);

    // Every server DOWN: the monitor says 503; the frontend closes what it accepts.
    b[0].set_ready(false);
    b[2].set_ready(false);
    until("all DOWN", Duration::from_secs(5), || {
        get(monitor, "/haproxy_ready").unwrap().0 == 503
    });
    let mut refused = TcpStream::connect(ports.front()).unwrap();
    refused.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    assert_eq!(fate(&mut refused, Duration::from_secs(5)), Fate::Cut);
    // Back: rise 2 passes.
    b[1].set_ready(true);
    until("m1 UP", Duration::from_secs(5), || {
        status(ports, "m1") == "UP"
    });
    assert_eq!(get(monitor, "/haproxy_ready").unwrap().0, 200);
    assert_eq!(names(ports.front(), 2), ["b", "b"]);
    // Anything else on the monitor port: haproxy's 503.
    assert_eq!(get(monitor, "/other").unwrap().0, 503);
}

#[test]
fn a_killed_server_under_load_costs_only_the_connections_in_flight_when_it_died() {
    let mut b = backends(3);
    let ports = Ports::new();
    let cfg = config(ports, &b.iter().collect::<Vec<_>>(), "", CHECKS);
    let p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    let load = Load::start(ports.front(), 8);
    until("load on every server", Duration::from_secs(10), || {
        b.iter().all(|s| s.requests() >= 10)
    });
    until("m0 fully UP", Duration::from_secs(5), || {
        fully_up(ports, "m0")
    });
    let dying = Instant::now();
    b[0].stop();
    let dead = Instant::now();
    until("m0 DOWN", Duration::from_secs(5), || {
        status(ports, "m0") == "DOWN"
    });
    load.serve(100, Duration::from_secs(10));
    let outcome = load.stop();
    let s = support::stats(ports);
    let m0 = &s["backends"][0]["servers"][0];
    eprintln!(
        "killed server under load: {} served, {} failed, m0 {m0}",
        outcome.ok,
        outcome.failed()
    );
    // Until the checks noticed, new connections went to the dead m0, were refused, and were
    // retried and redispatched (retries 3, option redispatch): none of them may fail.
    assert!(
        m0["connection_errors_total"].as_u64().unwrap() > 0,
        "no connection tried the dead server: the retries were not exercised"
    );
    // What was in flight to m0 when it died is cut, as with haproxy in TCP mode (the request
    // bytes are gone to the dead server; nothing can replay them): only those may fail.
    let since_kill = |t: Instant| match t.checked_duration_since(dying) {
        Some(after) => format!("+{after:?}"),
        None => format!("-{:?}", dying - t),
    };
    let not_in_flight: Vec<String> = outcome
        .failures
        .iter()
        .filter(|f| f.started > dead || f.ended < dying)
        .map(|f| {
            let (from, to) = (since_kill(f.started), since_kill(f.ended));
            format!("{from}..{to} after the kill: {}", f.error)
        })
        .collect();
    assert!(
        not_in_flight.is_empty(),
        "{} of {} failures were not in flight when m0 died: {not_in_flight:?}\n{}",
        not_in_flight.len(),
        outcome.failed(),
        p.log()
    );
}

#[test]
fn with_no_retries_only_the_connections_before_the_checks_notice_fail() {
    let mut b = backends(2);
    let ports = Ports::new();
    // Checks a second apart: a dead server that was fully UP stays UP (fall 2) for a second
    // at least.
    let cfg = config(
        ports,
        &b.iter().collect::<Vec<_>>(),
        "  retries 0\n",
        "inter 1s fall 2 rise 2",
    );
    let _p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    until("m0 fully UP", Duration::from_secs(5), || {
        fully_up(ports, "m0")
    });
    b[0].stop();
    // Before the checks notice: of two connections in a row round robin gives one to the dead
    // m0, which fails (no retry), and one to m1, which is served.
    let tries: Vec<(String, String)> = (0..2)
        .map(|_| (attempt(ports.front()), status(ports, "m0")))
        .collect();
    let want = [("cut", "UP"), ("200 from b", "UP")].map(|(a, m)| (a.to_string(), m.to_string()));
    assert_eq!(
        tries, want,
        "(fate, m0's status after) of two requests right after m0 died: round robin gives the \
         first to the dead m0, whose connection is cut (no retry), the second to m1, both \
         before the checks noticed"
    );
    until("m0 DOWN", Duration::from_secs(5), || {
        status(ports, "m0") == "DOWN"
    });
    // After: nothing goes to m0, nothing fails.
    let load = Load::start(ports.front(), 4);
    load.serve(50, Duration::from_secs(10));
    let outcome = load.stop();
    assert_eq!(outcome.failed(), 0, "{:?}", outcome.errors());
}

/// The slow-start period of [`slow_start_ramps_a_returning_server`].
const SLOWSTART: Duration = Duration::from_secs(4);

/// A weight-1 server's effective weight `up_for` after it came UP with `slowstart 4s`, as
/// haproxy's `slowstart` documents it: from the transition to UP the weight grows linearly
/// to the full weight over the period. In haproxy's units (user weight × 16, the 16 steps of
/// the ramp), rounded up and never 0 so that the server gets traffic at once:
/// ceil(16 · t / 4 s), at least 1, 16 from 4 s on.
fn slow_start_weight(up_for: Duration) -> u64 {
    if up_for >= SLOWSTART {
        return 16;
    }
    // In microseconds, as lb-proxy ramps (balance::effective_weight): with whole milliseconds
    // on one side only, a read 0.4 ms past a step wants the other side's next weight.
    let ramped = (16 * up_for.as_micros()).div_ceil(SLOWSTART.as_micros());
    u64::try_from(ramped).unwrap().clamp(1, 16)
}

/// m0's (a's) effective weight from the stats, with the instants before and after the read.
fn sample_weight(ports: Ports) -> (Instant, u64, Instant) {
    let before = Instant::now();
    let s = support::stats(ports);
    let w = s["backends"][0]["servers"][0]["effective_weight"]
        .as_u64()
        .unwrap();
    (before, w, Instant::now())
}

/// How many of `n` consecutive picks a (weight between `lo` and `hi` throughout) can get
/// against b (16 throughout). Smooth weighted round robin of two servers keeps a's `current`
/// within [-16, 16] (it is picked, losing 16, only when 2·current + w ≥ 16, and otherwise
/// gains w < 16 - current), and each pick moves it by -16 (a) or +w (b): over the window
/// 16·A = Σ_b-picks w − Δcurrent with |Δcurrent| ≤ 32, so
/// (n·lo − 32)/(16 + lo) ≤ A ≤ (n·hi + 32)/(16 + hi).
fn share_bounds(n: u64, lo: u64, hi: u64) -> (u64, u64) {
    let low = (n * lo).saturating_sub(32).div_ceil(16 + lo);
    let high = (n * hi + 32) / (16 + hi);
    (low, high)
}

#[test]
fn slow_start_ramps_a_returning_server() {
    let mut b = backends(2);
    let ports = Ports::new();
    let options = format!("{CHECKS} slowstart {}ms", SLOWSTART.as_millis());
    let cfg = config(ports, &b.iter().collect::<Vec<_>>(), "", &options);
    let _p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    b[0].stop();
    until("m0 DOWN", Duration::from_secs(5), || {
        status(ports, "m0") == "DOWN"
    });
    b[0].restart().unwrap();
    // When m0 came UP lies between the start of the last read that saw it DOWN and the end of
    // the first that saw it UP (read back to back, no sleep, to keep that short).
    let (mut down_seen, deadline) = (Instant::now(), Instant::now() + Duration::from_secs(5));
    let up_seen = loop {
        let before = Instant::now();
        let up = status(ports, "m0") == "UP";
        if up {
            break Instant::now();
        }
        assert!(before < deadline, "m0 not UP again within 5 s");
        down_seen = before;
    };
    // The weight read at r and the weight m0 had while a window of requests ran, from the
    // formula at the earliest and the latest m0 can have come UP.
    let bracket = |from: Instant, to: Instant| {
        let lo = slow_start_weight(from.saturating_duration_since(up_seen));
        (
            lo,
            slow_start_weight(to.saturating_duration_since(down_seen)),
        )
    };
    let (mut table, mut wrong, mut ramping_windows) = (Vec::new(), 0, 0);
    const N: u64 = 34;
    loop {
        let (r0, w, r1) = sample_weight(ports);
        let (lo, hi) = bracket(r0, r1);
        let weight_ok = (lo..=hi).contains(&w);
        let start = Instant::now();
        let a = names(ports.front(), N as usize)
            .iter()
            .filter(|s| *s == "a")
            .count() as u64;
        let end = Instant::now();
        let (wlo, whi) = bracket(start, end);
        let (min, max) = share_bounds(N, wlo, whi);
        let share_ok = (min..=max).contains(&a);
        wrong += usize::from(!weight_ok) + usize::from(!share_ok);
        ramping_windows += u32::from(whi < 16);
        table.push(format!(
            "+{:>4} ms: weight {w:>2} (want {lo}..={hi}){}, a got {a:>2} of {N} (want {min}..={max}){}",
            r0.saturating_duration_since(up_seen).as_millis(),
            if weight_ok { "" } else { " WRONG" },
            if share_ok { "" } else { " WRONG" },
        ));
        if wlo == 16 {
            break; // a full window at full weight: an equal share.
        }
    }
    let table = table.join("\n");
    eprintln!(
        "slow start, m0 UP within {:?}:\n{table}",
        up_seen - down_seen
    );
    assert_eq!(wrong, 0, "{table}");
    // The ramp was watched, not just its end: windows through the 4 s at less than full weight.
    assert!(ramping_windows >= 4, "{table}");
}

#[test]
fn reload_under_load_changes_the_servers_without_losing_a_connection() {
    let b = backends(3);
    let ports = Ports::new();
    let first = config(ports, &[&b[0], &b[1]], "", CHECKS);
    let p = Proxy::start(Kind::LbProxy, &first, ports, &[]);
    let load = Load::start(ports.front(), 8);
    load.serve(50, Duration::from_secs(10));
    // c joins, a leaves (its established connections drain).
    let second = config(ports, &[&b[1], &b[2]], "", CHECKS);
    p.reload(&second);
    until("reloaded", Duration::from_secs(5), || {
        p.log().contains("reloaded")
    });
    load.serve(50, Duration::from_secs(10));
    // A broken file is refused; the running configuration keeps serving.
    p.reload("frontend main\n  bind 127.0.0.1:1\n  what-is-this\n");
    until("refused", Duration::from_secs(5), || {
        p.log().contains("reload refused")
    });
    // Whatever a had in flight before the reload has long been answered: from now on a gets
    // nothing while the load goes on.
    let before = b[0].requests();
    load.serve(100, Duration::from_secs(10));
    let outcome = load.stop();
    assert_eq!(outcome.failed(), 0, "{:?}\n{}", outcome.errors(), p.log());
    assert_eq!(b[0].requests(), before, "a is out of the rotation");
    let mut seen = names(ports.front(), 4);
    seen.sort();
    assert_eq!(seen, ["b", "b", "c", "c"]);
}

#[test]
fn maxconn_holds_the_excess_in_the_backlog_with_one_socket() {
    maxconn(&["--runtime", "work-stealing"]);
}

#[test]
fn maxconn_holds_the_excess_with_a_socket_per_core() {
    // The default: two sockets share the frontend, neither may starve the other of its slots.
    maxconn(&["--threads", "2"]);
}

fn maxconn(args: &[&str]) {
    let b = backends(1);
    let ports = Ports::new();
    let cfg = config(ports, &[&b[0]], "  maxconn 2\n", CHECKS);
    let p = Proxy::start(Kind::LbProxy, &cfg, ports, args);
    let hold = |_| {
        let s = TcpStream::connect(ports.front()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut s2 = s.try_clone().unwrap();
        s2.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let mut buf = [0u8; 256];
        let n = s2.read(&mut buf).unwrap();
        assert!(n > 0);
        s
    };
    let held: Vec<TcpStream> = (0..2).map(hold).collect();
    // The third connects (the kernel's backlog) but is not served...
    let mut third = TcpStream::connect(ports.front()).unwrap();
    third.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    assert_eq!(
        fate(&mut third, Duration::from_millis(700)),
        Fate::Open,
        "beyond maxconn: neither served nor refused"
    );
    // More clients wait in the backlog too (as many as it holds: its length is maxconn, the
    // kernel's SYN retries keep the others out) and cost the proxy no descriptor: it accepts
    // none of them (a check's socket may come and go meanwhile).
    let before = sockets(p.pid());
    let waiting: Vec<TcpStream> = (0..10)
        .filter_map(|_| TcpStream::connect_timeout(&ports.front(), Duration::from_millis(100)).ok())
        .collect();
    assert!(!waiting.is_empty(), "no room in the backlog");
    std::thread::sleep(Duration::from_millis(300));
    let after = sockets(p.pid());
    assert!(
        after <= before + 1,
        "{before} sockets before {} more clients, {after} after",
        waiting.len()
    );
    drop(waiting);
    let mut answer = String::new();
    // ...until a slot frees up.
    drop(held);
    third
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    third.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// Raises this process's soft limit on open files to `n` (its clients and the stand-in API
/// servers hold a socket each), within the hard limit.
fn raise_open_files(n: u64) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    if soft < n {
        setrlimit(Resource::RLIMIT_NOFILE, n.min(hard), hard).unwrap();
    }
}

/// The sockets process `pid` holds open.
fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with("socket:"))
        .count()
}

#[test]
fn a_flood_of_clients_leaves_the_checks_and_the_monitor_their_descriptors() {
    // 1,024 descriptors, 700 clients that connect and send nothing: with each accepted (two
    // descriptors each, the client's and the server's) they would take every descriptor, the
    // checks could not open a socket (the server DOWN, the monitor failing, the VIP moving),
    // nor the monitor answer. haproxy beside, on the same file and limit: what it does is
    // printed, not judged (its maxconn, sized from the limit, is shared by every listener, so
    // the flood takes the monitor's too: its answer did not come within 5 s).
    raise_open_files(4096);
    if let Err(e) = flood(Kind::Haproxy) {
        eprintln!("haproxy under the same flood: {e}");
    }
    if let Err(e) = flood(Kind::LbProxy) {
        panic!("lb-proxy under a flood: {e}");
    }
}

/// Floods a proxy of `kind` as above: what went wrong first, if anything.
fn flood(kind: Kind) -> Result<(), String> {
    let b = backends(1);
    let ports = Ports::new();
    // No global maxconn: haproxy refuses to start when the limit cannot hold the one written,
    // and sizes its own from the limit without one.
    let cfg = config(ports, &[&b[0]], "", CHECKS).replace("global\n  maxconn 4000\n", "");
    let p = Proxy::start_limited(kind, &cfg, ports, &[], Some(1024));
    let flood: Vec<TcpStream> = (0..700)
        .map(|_| TcpStream::connect(ports.front()).unwrap())
        .collect();
    // For 3 s (15 check intervals, `fall 2`): the monitor answers 200 and the server stays UP.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        match get(ports.monitor(), "/haproxy_ready") {
            Ok((200, _)) => {}
            Ok((code, _)) => return Err(format!("the monitor said {code}:\n{}", p.log())),
            Err(e) => return Err(format!("the monitor did not answer: {e}\n{}", p.log())),
        }
        // (haproxy's stats page is another format; its monitor fails with no server UP.)
        let m0 = if kind == Kind::LbProxy {
            status(ports, "m0")
        } else {
            "UP".into()
        };
        if m0 != "UP" {
            return Err(format!("the server is {m0}:\n{}", p.log()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if p.log().contains("DOWN") {
        return Err(format!("a server went DOWN:\n{}", p.log()));
    }
    // The flood gone, clients are served again.
    drop(flood);
    until("served again", Duration::from_secs(5), || {
        get(ports.front(), "/").is_ok_and(|(code, _)| code == 200)
    });
    Ok(())
}

#[test]
fn timeouts_and_half_close() {
    let b = backends(1);
    let ports = Ports::new();
    let cfg = config(
        ports,
        &[&b[0]],
        "  timeout client 800ms\n  timeout client-fin 300ms\n",
        CHECKS,
    )
    .replace("timeout client 30s\n", "");
    let _p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);

    // Idle: cut after `timeout client`.
    let mut s = TcpStream::connect(ports.front()).unwrap();
    let start = Instant::now();
    assert_eq!(fate(&mut s, Duration::from_secs(5)), Fate::Cut);
    let idle = start.elapsed();
    assert!(
        idle >= Duration::from_millis(700) && idle < Duration::from_secs(3),
        "{idle:?}"
    );

    // Half-close: the client sends its request and shuts its side; the answer still comes.
    let mut s = TcpStream::connect(ports.front()).unwrap();
    s.write_all(b"GET /bytes/200000 HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).unwrap();
    assert!(
        answer.starts_with(b"HTTP/1.1 200") && answer.ends_with(&[b'x'; 100]),
        "{} bytes",
        answer.len()
    );
}

#[test]
fn half_closed_and_idle_is_cut_after_timeout_client_fin() {
    // A server that answers and then keeps its side open whatever the client does (the
    // stand-in API server would close on the client's FIN and end the connection itself).
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = holder.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut c in holder.incoming().map(Result::unwrap) {
            let mut request = [0u8; 256];
            let _ = c.read(&mut request);
            let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nh\n");
            held.push(c);
        }
    });
    let ports = Ports::new();
    let cfg = format!(
        "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 800ms\n  timeout client-fin 300ms\n  timeout server 30s\n\
         frontend main\n  bind {}\n  default_backend masters\n\
         frontend monitor\n  bind {}\n  mode http\n  monitor-uri /haproxy_ready\n\
         backend masters\n  server holder {server}\n",
        ports.front(),
        ports.monitor(),
    );
    let _p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    let mut s = TcpStream::connect(ports.front()).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(answer(&mut s), "h");
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let start = Instant::now();
    assert_eq!(fate(&mut s, Duration::from_secs(5)), Fate::Cut);
    // 300 ms of silence after the FIN, not `timeout client`'s 800 ms (and not at once).
    let fin = start.elapsed();
    assert!(
        fin >= Duration::from_millis(250) && fin < Duration::from_millis(700),
        "client-fin: {fin:?}"
    );
}

/// A listener whose backlog is full, and the connections that fill it: it drops SYNs, so
/// connecting to its address hangs (a server gone dark, on loopback). Keep the second value
/// alive as long as the hole is needed.
fn hole() -> (SocketAddr, (socket2::Socket, Vec<TcpStream>)) {
    let black = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    black
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    black.listen(0).unwrap();
    let addr = black.local_addr().unwrap().as_socket().unwrap();
    let fill: Vec<TcpStream> = (0..4)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_millis(100)).ok())
        .collect();
    (addr, (black, fill))
}

#[test]
fn a_server_that_never_accepts_is_a_connect_timeout_then_a_redispatch() {
    let (addr, _hole) = hole();
    // Dropped SYNs: a timeout, not a refusal (which would be a closed port, not a hole).
    let hole = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).map_err(|e| e.kind());
    assert_eq!(
        hole.map(drop),
        Err(std::io::ErrorKind::TimedOut),
        "the hole still accepts"
    );
    let good = backends(1);
    let ports = Ports::new();
    let cfg = format!(
        "defaults\n  mode tcp\n  timeout connect 300ms\n  timeout client 5s\n  timeout server 5s\n  retries 1\n  option redispatch\n\
         frontend main\n  bind {}\n  default_backend masters\n\
         frontend monitor\n  bind {}\n  mode http\n  monitor-uri /haproxy_ready\n\
         backend masters\n  server hole {addr}\n  server good {}\n",
        ports.front(),
        ports.monitor(),
        good[0].address()
    );
    let _p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    // Round robin sends every other connection to the hole; each of those waits one connect
    // timeout and is redispatched (retries 1: the only retry is the last).
    let start = Instant::now();
    let seen = names(ports.front(), 4);
    assert_eq!(seen, ["a", "a", "a", "a"]);
    assert!(
        start.elapsed() >= Duration::from_millis(550),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn stats_as_json_text_and_prometheus_with_auth() {
    let b = backends(2);
    let ports = Ports::new();
    let cfg = config(ports, &b.iter().collect::<Vec<_>>(), "", CHECKS).replace(
        "  stats uri /\n",
        "  stats uri /\n  stats auth admin:secret\n  stats hide-version\n",
    );
    let _p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    let mut seen = names(ports.front(), 4);
    seen.sort();
    assert_eq!(seen, ["a", "a", "b", "b"], "all four through this lb-proxy");
    let at = ports.stats();
    assert_eq!(get(at, "/").unwrap().0, 401);
    let auth = "Authorization: Basic YWRtaW46c2VjcmV0\r\n";
    let (code, body) = support::request(at, "/;json", auth).unwrap();
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(v.get("version").is_none(), "hide-version");
    assert_eq!(v["backends"][0]["active_servers"], 2);
    let main = v["frontends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "main")
        .unwrap();
    // A session counts when it is accepted, before the client can have its answer: exact.
    assert_eq!(main["sessions_total"], 4);
    let (_, text) = support::request(at, "/", auth).unwrap();
    assert!(text.contains("backend masters: 2 server(s) UP"), "{text}");
    let (_, metrics) = support::request(at, "/metrics", auth).unwrap();
    assert!(
        metrics.contains("haproxy_server_status{proxy=\"masters\",server=\"m0\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("# TYPE haproxy_server_sessions_total counter"));
}

#[test]
fn the_portable_copy_forwards_the_same_bytes() {
    let b = backends(1);
    let ports = Ports::new();
    let cfg = config(ports, &[&b[0]], "", CHECKS);
    let _p = Proxy::start(Kind::LbProxy, &cfg, ports, &["--copy"]);
    let mut s = TcpStream::connect(ports.front()).unwrap();
    s.write_all(b"GET /bytes/1000000 HTTP/1.0\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).unwrap();
    let body = answer.split(|&c| c == b'\n').next_back().unwrap();
    assert_eq!(body.len(), 1_000_000);
}

#[test]
fn sigusr1_waits_for_the_last_connection() {
    soft_stop(false);
}

#[test]
fn sigusr1_waits_for_a_connection_from_before_a_reload_that_changed_maxconn() {
    // The connection came in under the old frontend (its own maxconn slots): still counted.
    soft_stop(true);
}

fn soft_stop(reload_first: bool) {
    let b = backends(1);
    let ports = Ports::new();
    let cfg = config(ports, &[&b[0]], "", CHECKS);
    let mut p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    let mut held = TcpStream::connect(ports.front()).unwrap();
    held.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut buf = [0u8; 128];
    assert!(held.read(&mut buf).unwrap() > 0);
    if reload_first {
        p.reload(&config(ports, &[&b[0]], "  maxconn 50\n", CHECKS));
        until("reloaded", Duration::from_secs(5), || {
            p.log().contains("reloaded")
        });
    }
    p.signal(nix::sys::signal::Signal::SIGUSR1);
    until("the soft stop", Duration::from_secs(5), || {
        p.log()
            .contains("soft stop: listeners closed, waiting for 1 connection(s)")
    });
    // Closed: refused by the kernel (no listener), not some other failure.
    until("the frontend to close", Duration::from_secs(5), || {
        TcpStream::connect(ports.front())
            .map(drop)
            .map_err(|e| e.kind())
            == Err(std::io::ErrorKind::ConnectionRefused)
    });
    // It stays while the connection is open (watched for half a second: staying is the
    // absence of an exit)...
    assert_eq!(
        p.wait(Duration::from_millis(500)),
        None,
        "left with a connection open:\n{}",
        p.log()
    );
    // ...the held connection still works, and closing it lets lb-proxy go.
    held.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut rest = Vec::new();
    held.read_to_end(&mut rest).unwrap();
    assert!(!rest.is_empty());
    drop(held);
    assert!(p.wait(Duration::from_secs(5)).is_some_and(|s| s.success()));
}

#[test]
fn on_marked_down_shutdown_sessions_cuts_established_connections() {
    let b = backends(2);
    let ports = Ports::new();
    let mut cfg = config(
        ports,
        &[&b[0]],
        "",
        &format!("{CHECKS} on-marked-down shutdown-sessions"),
    );
    cfg.push_str(&format!(
        "  server m1 {} verify none check check-ssl {CHECKS}\n",
        b[1].address()
    ));
    let _p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    // Two keep-alive connections: round robin puts one on each server.
    let open = || {
        let mut s = TcpStream::connect(ports.front()).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let name = answer(&mut s);
        (s, name)
    };
    let mut both = [open(), open()];
    both.sort_by(|x, y| x.1.cmp(&y.1));
    let names: Vec<&str> = both.iter().map(|(_, name)| name.as_str()).collect();
    assert_eq!(names, ["a", "b"], "one on each server");
    let [(on_a, _), (on_b, _)] = &mut both;
    b[0].set_ready(false);
    until("m0 DOWN", Duration::from_secs(5), || {
        status(ports, "m0") == "DOWN"
    });
    // m0 has shutdown-sessions: its connection is cut (the server behind it is alive and keeps
    // it open: only lb-proxy can end it); m1's goes on and still answers.
    assert_eq!(
        fate(on_a, Duration::from_secs(5)),
        Fate::Cut,
        "the connection to m0"
    );
    assert_eq!(fate(on_b, Duration::from_millis(200)), Fate::Open);
    on_b.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(answer(on_b), "b", "the connection to m1 goes on");
}

/// The body of one keep-alive HTTP answer on `s` (head, then Content-Length bytes), trimmed:
/// all of it, however the server's writes were split.
fn answer(s: &mut TcpStream) -> String {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .map(|n| n.trim().parse::<usize>().unwrap())
                .unwrap();
            if body.len() >= length {
                return body.trim().to_string();
            }
        }
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed in the middle of an answer: {text:?}");
        got.extend_from_slice(&buf[..n]);
    }
}

/// One request through `front`: "cut" when the connection ended without an answer (the write
/// or the read saw a reset, or EOF came first), "STATUS from BODY" when it was answered.
fn attempt(front: SocketAddr) -> String {
    use std::io::ErrorKind;
    let mut s = TcpStream::connect(front).unwrap();
    if let Err(e) = s.write_all(b"GET / HTTP/1.0\r\n\r\n") {
        assert!(
            matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
            "write: {e}"
        );
        return "cut".into();
    }
    match fate(&mut s, Duration::from_secs(5)) {
        Fate::Cut => "cut".into(),
        Fate::Open => "open".into(),
        Fate::Data(mut text) => {
            s.read_to_string(&mut text).unwrap();
            let status = text.split_whitespace().nth(1).unwrap_or_default();
            let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b.trim());
            format!("{status} from {body}")
        }
    }
}

/// What a client connection did while the test waited on it.
#[derive(Debug, PartialEq, Eq)]
enum Fate {
    /// Ended: EOF or a reset.
    Cut,
    /// Still open and silent after the wait.
    Open,
    /// Bytes came.
    Data(String),
}

/// Reads from `s` for at most `within`: what came of it.
fn fate(s: &mut TcpStream, within: Duration) -> Fate {
    use std::io::ErrorKind;
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 256];
    match s.read(&mut buf) {
        Ok(0) => Fate::Cut,
        Ok(n) => Fate::Data(String::from_utf8_lossy(&buf[..n]).into_owned()),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Fate::Open,
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
            ) =>
        {
            Fate::Cut
        }
        Err(e) => panic!("read: {e}"),
    }
}

/// Passive health (`observe layer4 error-limit 1 on-error mark-down`): the first refused
/// connection takes a dead server out at once, long before its checks would (fall 3), the
/// client never sees it (redispatch), the stats say why; back, it is taken in only after
/// `rise` checks, and then with slow start.
#[test]
fn a_refused_connection_marks_a_server_down_and_its_checks_bring_it_back_slowly() {
    let mut b = backends(3);
    let ports = Ports::new();
    let passive = "observe layer4 error-limit 1 on-error mark-down slowstart 20s";
    let cfg = config(
        ports,
        &b.iter().collect::<Vec<_>>(),
        "",
        &format!("inter 1s fall 3 rise 3 {passive}"),
    );
    let p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    until("m0 fully UP", Duration::from_secs(10), || {
        fully_up(ports, "m0")
    });
    b[0].stop();
    // Round robin comes to m0 within three requests: refused, DOWN, redispatched.
    let seen = names(ports.front(), 3);
    assert!(seen.iter().all(|n| n == "b" || n == "c"), "{seen:?}");
    let s = support::stats(ports);
    let m0 = &s["backends"][0]["servers"][0];
    assert_eq!(m0["status"], "DOWN", "{m0}\n{}", p.log());
    // Three failed checks (a second apart) would be needed without passive health.
    assert!(m0["check_failures_total"].as_u64().unwrap() < 3, "{m0}");
    assert_eq!(m0["passive_downs_total"], 1, "{m0}");
    let why = m0["last_passive"].as_str().unwrap();
    assert!(why.contains("1 consecutive connection error"), "{why}");
    let (_, text) = get(ports.stats(), "/").unwrap();
    assert!(text.contains("passive: 1 action(s), 1 DOWN"), "{text}");
    let (_, metrics) = get(ports.stats(), "/metrics").unwrap();
    let down = "lb_proxy_server_passive_down_total{proxy=\"masters\",server=\"m0\"} 1\n";
    assert!(metrics.contains(down), "{metrics}");
    // And `lb-proxy check --servers` on the stats page: exit 0 (two servers serve), the
    // passive DOWN with its reason.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lb-proxy"))
        .args(["check", "--servers", &format!("http://{}/", ports.stats())])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.starts_with("masters: 2 of 3 servers UP\n")
            && said.contains("m0 DOWN: ")
            && said
                .contains("passive: 1 DOWN, 0 race(s) lost, last: 1 consecutive connection error"),
        "{said}"
    );

    // Back: UP only after rise (3) passing checks, then a small share at first.
    b[0].restart().unwrap();
    let before = b[0].readyz_requests();
    until("m0 UP", Duration::from_secs(15), || {
        status(ports, "m0") == "UP"
    });
    assert!(
        b[0].readyz_requests() - before >= 3,
        "UP before rise checks"
    );
    let s = support::stats(ports);
    let weight = s["backends"][0]["servers"][0]["effective_weight"]
        .as_u64()
        .unwrap();
    assert!(weight < 16, "slow start: {weight} of 16 at once");
}

/// lb-proxy's connect race on loopback: a server whose backlog is full (SYNs dropped, like a
/// dark one) never makes a client wait its `timeout connect`: after 100 ms a second attempt
/// goes to the good server and wins; after two lost races the hole is DOWN (passive) and
/// the stats say why.
#[test]
fn a_connect_race_hides_a_dark_server_and_marks_it_down() {
    let (addr, _hole) = hole();
    let good = backends(1);
    let ports = Ports::new();
    let cfg = format!(
        "defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 5s\n  timeout server 5s\n  retries 3\n\
         #lb-proxy: race-connect 100ms losses 2\n\
         frontend main\n  bind {}\n  default_backend masters\n\
         frontend monitor\n  bind {}\n  mode http\n  monitor-uri /haproxy_ready\n\
         listen stats\n  bind {}\n  mode http\n  stats enable\n  stats uri /\n\
         backend masters\n  server hole {addr} check inter 10s\n  server good {} check inter 10s\n",
        ports.front(),
        ports.monitor(),
        ports.stats(),
        good[0].address()
    );
    let p = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    // Without the race each connection sent to the hole would wait 5 s, then more.
    let start = Instant::now();
    assert_eq!(names(ports.front(), 6), ["a"; 6]);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(3), "{took:?}\n{}", p.log());
    let s = support::stats(ports);
    let hole = &s["backends"][0]["servers"][0];
    assert_eq!(hole["status"], "DOWN", "{hole}");
    assert_eq!(hole["races_lost_total"], 2, "{hole}");
    let why = hole["last_passive"].as_str().unwrap();
    assert!(why.contains("2 connect race(s) lost in a row"), "{why}");
}

/// A server that takes connections and closes them unanswered, as one dying mid-stream.
fn closer() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let _ = s.read(&mut [0u8; 1024]);
        }
    });
    addr
}

/// lb-proxy's `replay-unanswered`: what a client sent to a server that closed without a word
/// goes to another server; a request written in two parts is passed on whole while the
/// server has not answered yet (it answers only once it has the whole head).
#[test]
fn replay_unanswered_sends_the_request_again_elsewhere() {
    let good = backends(1);
    let ports = Ports::new();
    let cfg = |replay: &str| {
        format!(
            "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n  retries 3\n\
             #lb-proxy: replay-unanswered {replay}\n\
             frontend main\n  bind {}\n  default_backend masters\n\
             frontend monitor\n  bind {}\n  mode http\n  monitor-uri /haproxy_ready\n\
             backend masters\n  server closer {}\n  server good {}\n",
            ports.front(),
            ports.monitor(),
            closer(),
            good[0].address()
        )
    };
    let p = Proxy::start(Kind::LbProxy, &cfg("on"), ports, &[]);
    assert_eq!(names(ports.front(), 4), ["a"; 4], "{}", p.log());
    let start = Instant::now();
    let mut s = TcpStream::connect(ports.front()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    s.write_all(b"Host: x\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
    // Not held until `timeout server` (5 s).
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    drop(p);

    // Without it (haproxy's mode tcp), what went to the closer is lost.
    let p = Proxy::start(Kind::LbProxy, &cfg("off"), ports, &[]);
    let lost = (0..4).filter(|_| get(ports.front(), "/").is_err()).count();
    assert!(lost > 0, "{}", p.log());
}

/// A server that answers a whole HTTP request head and closes, 300 ms after its last byte, a
/// connection that has not sent one, as kube-apiserver drops a TLS handshake that does not
/// finish in time: what a proxy in front of API servers sees of idle clients.
fn idle_closer() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_millis(300)));
                let (mut got, mut buf) = (Vec::new(), [0u8; 1024]);
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\nidle-closer\n");
            });
        }
    });
    addr
}

/// Idle clients (issue 27): connections that send nothing, or only a TLS record's header,
/// and that the servers close after their own timeout, take no server out with
/// `replay-unanswered` and `observe layer4 error-limit 1`: as haproxy's passive health, only
/// what fails to connect counts, and the close goes to the client rather than to another
/// server. The positive control: a server that closes a whole request unanswered is still
/// marked DOWN at once.
#[test]
fn idle_clients_that_the_servers_close_take_no_server_out() {
    let ports = Ports::new();
    let cfg = |servers: &[SocketAddr]| {
        let mut c = format!(
            "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n  \
             retries 3\n  option redispatch\n#lb-proxy: replay-unanswered on\n\
             frontend main\n  bind {}\n  default_backend masters\n\
             frontend monitor\n  bind {}\n  mode http\n  monitor-uri /haproxy_ready\n\
             listen stats\n  bind {}\n  mode http\n  stats enable\n  stats uri /\n\
             backend masters\n",
            ports.front(),
            ports.monitor(),
            ports.stats()
        );
        for (i, s) in servers.iter().enumerate() {
            c.push_str(&format!(
                "  server m{i} {s} check inter 10s observe layer4 error-limit 1 on-error mark-down\n"
            ));
        }
        c
    };
    let passive_downs = || -> Vec<u64> {
        support::stats(ports)["backends"][0]["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["passive_downs_total"].as_u64().unwrap())
            .collect()
    };
    let p = Proxy::start(
        Kind::LbProxy,
        &cfg(&[idle_closer(), idle_closer()]),
        ports,
        &[],
    );
    until("both UP", Duration::from_secs(10), || {
        status(ports, "m0") == "UP" && status(ports, "m1") == "UP"
    });
    // Eight idle clients at once: four silent, four with the header of a TLS record that
    // announces 512 bytes and sends none. Each is closed, as its server closed it.
    let front = ports.front();
    let idle: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(front).unwrap();
                if i % 2 == 1 {
                    s.write_all(&[0x16, 3, 1, 2, 0]).unwrap();
                }
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut answer = Vec::new();
                s.read_to_end(&mut answer).map(|_| answer.len())
            })
        })
        .collect();
    for t in idle {
        assert_eq!(t.join().unwrap().unwrap(), 0, "an idle client was answered");
    }
    assert_eq!(passive_downs(), [0, 0], "{}", p.log());
    assert_eq!(names(front, 4), ["idle-closer"; 4], "{}", p.log());
    drop(p);

    // The positive control: a server that closes a whole request unanswered.
    let p = Proxy::start(Kind::LbProxy, &cfg(&[closer(), idle_closer()]), ports, &[]);
    until("both UP", Duration::from_secs(10), || {
        status(ports, "m0") == "UP" && status(ports, "m1") == "UP"
    });
    assert_eq!(names(front, 4), ["idle-closer"; 4], "{}", p.log());
    assert_eq!(passive_downs()[0], 1, "{}", p.log());
}
