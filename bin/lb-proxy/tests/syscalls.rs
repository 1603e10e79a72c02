//! What a proxied connection costs in system calls, counted by strace on the running proxy:
//! the hot path stays as short as the kernel allows (see the README's lb-proxy benchmarks for
//! the figures beside haproxy's).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{backends, config, get, Kind, Ports, Proxy};

/// Connections counted: enough that the heartbeat's ticks and the start-up weigh nothing.
const CONNECTIONS: usize = 300;

/// System calls of `proxy` (every thread) while `work` runs: name -> calls.
fn count(proxy: &Proxy, work: impl FnOnce()) -> BTreeMap<String, u64> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("strace");
    let mut strace = Command::new("strace")
        .args(["-f", "-c", "-o"])
        .arg(&out)
        .args(["-p", &proxy.pid().to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("strace (scripts/test installs it)");
    // strace says "Process N attached ..." once it traces the proxy.
    let stderr = strace.stderr.take().unwrap();
    // Kept open until strace is done: it still writes there when it detaches.
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let attached = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.contains("attached"));
    assert!(attached, "strace did not attach to the proxy");
    // `-f -p` attaches to every thread in one go; give it a moment to seize them all.
    std::thread::sleep(Duration::from_millis(300));
    work();
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(strace.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    strace.wait().unwrap();
    let table = std::fs::read_to_string(&out).unwrap();
    let mut calls = BTreeMap::new();
    // "% time  seconds  usecs/call  calls  errors  syscall": calls is the 4th column, the
    // name the last; errors may be empty.
    for line in table.lines().skip(2) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 5 || f.last() == Some(&"total") {
            continue;
        }
        if let Ok(n) = f[3].parse::<u64>() {
            calls.insert(f.last().unwrap().to_string(), n);
        }
    }
    assert!(!calls.is_empty(), "no table from strace:\n{table}");
    calls
}

#[test]
fn a_new_connection_costs_no_wakeup_of_the_proxys_own_loop() {
    let b = backends(1);
    let ports = Ports::new();
    let cfg = config(ports, &[&b[0]], "", "inter 10s");
    let proxy = Proxy::start(Kind::LbProxy, &cfg, ports, &[]);
    // Warm: the first connections grow buffers and tables.
    for _ in 0..20 {
        get(ports.front(), "/").unwrap();
    }
    let calls = count(&proxy, || {
        for _ in 0..CONNECTIONS {
            get(ports.front(), "/").unwrap();
        }
    });
    let per = |name: &str| calls.get(name).copied().unwrap_or(0) as f64 / CONNECTIONS as f64;
    eprintln!("system calls per connection: {calls:?} / {CONNECTIONS}");
    // What follows is per connection only if strace saw them all: an attach that missed the
    // accepting thread would count none of them, and every ratio below would pass.
    let accepted = calls.get("accept4").copied().unwrap_or(0);
    assert!(
        accepted >= CONNECTIONS as u64,
        "strace saw {accepted} accept4(2) of {CONNECTIONS} connections: {calls:?}"
    );
    // tokio's timer wheel wrote to its eventfd whenever a connection armed its connect timeout
    // (1.0 per connection) until the heartbeat kept a timer due earlier.
    assert!(
        per("write") < 0.05,
        "write(2) per connection: {} ({calls:?})",
        per("write")
    );
    // Registered and deregistered once each, client and server: 4.
    assert!(per("epoll_ctl") <= 4.05, "epoll_ctl: {calls:?}");
    // The request and the answer, each in one send when it comes in one piece (a busy machine
    // splits a few); never an empty one for an end of file, which made it 4.
    assert!(per("sendto") < 3.0, "sendto: {calls:?}");
    // What the proxy asks of the kernel per connection, but its reads, sends and waits: accept
    // (and the one that says the backlog is empty), socket, 2 setsockopt (TCP_NODELAY and,
    // the client's first bytes in hand, TCP_QUICKACK off: smart connect, which saves a
    // segment each way), connect, getsockopt, shutdown, 2 closes, 4 epoll_ctl: 14 (13.8 when
    // the first bytes are not there yet), and a little for a check (every 10 s) on the main
    // thread. A call added to the path makes it 15. (Debug builds of std check with
    // fcntl(F_GETFD) that a descriptor it closes is open: not counted.)
    let load_dependent = ["epoll_wait", "recvfrom", "sendto"];
    let asked: u64 = calls
        .iter()
        .filter(|(name, _)| !load_dependent.contains(&name.as_str()))
        .filter(|(name, _)| cfg!(not(debug_assertions)) || name.as_str() != "fcntl")
        .map(|(_, n)| n)
        .sum();
    let asked = asked as f64 / CONNECTIONS as f64;
    assert!(
        asked <= 14.5,
        "{asked:.2} system calls per connection beside reads, sends and waits: {calls:?}"
    );
    // 4 reads (two answers, two ends), one more for an answer a busy machine splits (4.5 seen
    // under CI's load).
    assert!(per("recvfrom") <= 5.0, "recvfrom: {calls:?}");
    // How often the loops wait follows the scheduler, not the proxy: 4 at most one event at a
    // time, fewer when events come together (4.0 on a quiet machine), more when a loaded
    // machine wakes a loop between the events of one connection (5.4 seen in CI beside the
    // fuzzing build). A loop that spun would wait hundreds of times per connection.
    assert!(
        per("epoll_wait") <= 8.0,
        "epoll_wait per connection: {} ({calls:?})",
        per("epoll_wait")
    );
}
