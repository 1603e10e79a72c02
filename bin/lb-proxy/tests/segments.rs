//! What a proxied connection costs on the wire, counted by TCP_INFO (`tcpi_segs_in`) on the
//! client's and on the server's socket: `option tcp-smart-accept` (the ACK of the client's
//! request rides on the answer), smart connect (on by default: the client's first bytes
//! ride on the handshake's last ACK) and the last bytes of a direction leaving with its FIN
//! each save a segment, beside the same proxy without them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{free_port, get, loopback, Kind, Ports, Proxy};

/// Segments `socket` has received so far.
#[allow(unsafe_code)]
fn segments_in(socket: &TcpStream) -> u32 {
    use nix::libc;
    // SAFETY: getsockopt writes at most `len` bytes into `info`, a plain C struct that any
    // bit pattern is valid for; `len` is its size.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let r = libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            std::ptr::from_mut(&mut info).cast(),
            &mut len,
        );
        assert_eq!(r, 0, "TCP_INFO: {}", std::io::Error::last_os_error());
        info.tcpi_segs_in
    }
}

/// A server that answers each request (what comes up to an empty line) with its answer and
/// its FIN in one segment (corked, then shut), and notes how many segments it had received
/// on that connection by the time the request was whole.
struct Server {
    address: SocketAddr,
    seen: Arc<Mutex<Vec<u32>>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind((loopback(), 0)).unwrap();
        let address = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let notes = Arc::clone(&seen);
        std::thread::spawn(move || {
            for conn in listener.incoming().map_while(Result::ok) {
                let notes = Arc::clone(&notes);
                std::thread::spawn(move || answer(conn, &notes));
            }
        });
        Server { address, seen }
    }

    fn seen(&self) -> Vec<u32> {
        self.seen.lock().unwrap().clone()
    }
}

fn answer(mut conn: TcpStream, notes: &Mutex<Vec<u32>>) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    notes.lock().unwrap().push(segments_in(&conn));
    socket2::SockRef::from(&conn).set_tcp_cork(true).unwrap();
    let _ = conn.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let _ = conn.read_to_end(&mut Vec::new());
}

/// A frontend on `ports` to `server`, with `options` in its defaults, and a monitor URI for
/// [`Proxy::start`] to wait on.
fn config(ports: Ports, server: SocketAddr, options: &str) -> String {
    format!(
        "defaults\n  mode tcp\n  timeout connect 2s\n  timeout client 30s\n  timeout server 30s\n\
         {options}\
         frontend main\n  bind {}\n  maxconn 1\n  default_backend b\n\
         frontend monitor\n  bind {}\n  mode http\n  monitor-uri /haproxy_ready\n\
         backend b\n  server s {server}\n",
        ports.front(),
        ports.monitor()
    )
}

fn start(server: &Server, options: &str) -> (Proxy, Ports) {
    let ports = Ports {
        front: free_port(),
        monitor: free_port(),
        stats: free_port(),
    };
    let cfg = config(ports, server.address, options);
    let proxy = Proxy::start(Kind::LbProxy, &cfg, ports, &["--threads", "1"]);
    // One exchange first: the server is known reachable, the proxy warm.
    get(ports.front(), "/").unwrap();
    (proxy, ports)
}

/// The fewest segments a client received over `tries` requests, each on its own
/// connection, up to the answer's end (the FIN) and before it closed. The fewest, because a
/// machine busy enough to hold an answer past the delayed-ACK timer adds one.
fn client_segments(front: SocketAddr, tries: usize) -> u32 {
    (0..tries)
        .map(|_| {
            let mut c = TcpStream::connect(front).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            c.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
            let mut answer = Vec::new();
            c.read_to_end(&mut answer).unwrap();
            assert!(answer.ends_with(b"ok"), "{answer:?}");
            segments_in(&c)
        })
        .min()
        .unwrap()
}

#[test]
fn the_answer_its_fin_and_the_ack_of_the_request_reach_the_client_in_one_segment() {
    let server = Server::start();
    let (_proxy, ports) = start(&server, "  option tcp-smart-accept\n");
    let smart = client_segments(ports.front(), 5);
    let (_plain, plain_ports) = start(&server, "");
    let plain = client_segments(plain_ports.front(), 5);
    // The SYN-ACK, then the answer with its FIN and the ACK of the request.
    assert_eq!(
        smart, 2,
        "segments to the client (without smart accept: {plain})"
    );
    // Without it (the default) the request's ACK comes on its own, the FIN still with the
    // answer.
    assert_eq!(
        plain, 3,
        "segments to the client without option tcp-smart-accept"
    );
}

/// Segments the server had received when a client's request was whole, that request sent
/// while the proxy's only slot (`maxconn 1`) was taken, so that it is there when the proxy
/// accepts it.
fn server_segments(server: &Server, front: SocketAddr) -> u32 {
    let before = server.seen().len();
    let holder = TcpStream::connect(front).unwrap();
    // The holder is accepted (and connected onward) before the second client comes.
    std::thread::sleep(Duration::from_millis(200));
    let mut waiting = TcpStream::connect(front).unwrap();
    waiting
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    waiting.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    drop(holder);
    let mut answer = Vec::new();
    waiting.read_to_end(&mut answer).unwrap();
    assert!(answer.ends_with(b"ok"), "{answer:?}");
    let seen = server.seen();
    assert_eq!(
        seen.len(),
        before + 1,
        "the server saw one request: {seen:?}"
    );
    seen[before]
}

#[test]
fn the_clients_first_bytes_leave_with_the_last_ack_of_the_handshake() {
    let server = Server::start();
    let (_proxy, ports) = start(&server, "");
    let smart = server_segments(&server, ports.front());
    let (_plain, plain_ports) = start(&server, "  no option tcp-smart-connect\n");
    let plain = server_segments(&server, plain_ports.front());
    assert_eq!(
        smart + 1,
        plain,
        "segments at the server by the request's end: {smart} with smart connect, {plain} \
         without (the handshake's last ACK on its own)"
    );
}
