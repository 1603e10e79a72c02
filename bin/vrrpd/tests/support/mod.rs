//! Observing VIPs the way the rest of the link does: a client host that is not a router reaches
//! the VIP over TCP (whoever answers says its name), and a capture on the bridge decoded by
//! tshark shows the gratuitous ARPs and adverts. `ip` failing is a panic here, never "does not
//! hold the address".

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ipi_lab::{wait_for, Capture, Daemon, Host, Lab};
use ipi_net_tests::vrrp::Router;

/// The port every router's [`Responder`] listens on.
pub const PORT: u16 = 7070;

/// Whether `host`'s `eth0` holds `address` now. Panics when `ip` fails: a failed look is not
/// an absent address.
pub fn holds(host: &Host, address: IpAddr) -> bool {
    host.addresses()
        .unwrap_or_else(|e| panic!("ip addr in {}: {e}", host.name()))
        .contains(&address)
}

/// The MAC address of `host`'s `eth0`, as tshark writes it (`02:fc:...`).
pub fn mac(host: &Host) -> String {
    mac_of(host, "eth0")
}

/// The MAC address of `host`'s interface `dev`, as tshark writes it.
pub fn mac_of(host: &Host, dev: &str) -> String {
    let out = host.run("ip", ["-j", "link", "show", "dev", dev]).unwrap();
    assert!(out.success, "ip link in {}: {}", host.name(), out.stderr);
    let links: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    links[0]["address"]
        .as_str()
        .unwrap_or_else(|| panic!("no MAC in {}", out.stdout))
        .to_string()
}

/// A TCP listener on every address of a router's namespace (the VIP too, once it has it) that
/// answers each connection with the host's name and closes it.
pub struct Responder {
    stop: Arc<AtomicBool>,
}

impl Responder {
    pub fn start(host: &Host) -> Responder {
        // One socket for both families: [::] with IPV6_V6ONLY off takes IPv4 as mapped
        // addresses, whatever the namespace's net.ipv6.bindv6only says.
        let listener = host
            .within(|| {
                use socket2::{Domain, Socket, Type};
                let s = Socket::new(Domain::IPV6, Type::STREAM, None)?;
                s.set_only_v6(false)?;
                s.set_reuse_address(true)?;
                s.bind(&SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, PORT)).into())?;
                s.listen(64)?;
                let l = TcpListener::from(s);
                l.set_nonblocking(true)?;
                Ok(l)
            })
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (name, done) = (host.name().to_string(), stop.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        let _ = s.write_all(name.as_bytes());
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Responder { stop }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Which router answers a TCP connection from `client` to `vip` now (its host name), or None
/// when nobody does within 300 ms. The client's kernel picks the MAC: what its ARP cache says,
/// which only a gratuitous ARP updates at once after a move.
pub fn answers(client: &Host, vip: IpAddr) -> Option<String> {
    answers_within(client, vip, Duration::from_millis(300))
}

/// [`answers`] with its own `timeout` for the connection and for the answer.
pub fn answers_within(client: &Host, vip: IpAddr, timeout: Duration) -> Option<String> {
    client
        .within(|| {
            let mut s = TcpStream::connect_timeout(&SocketAddr::new(vip, PORT), timeout)?;
            s.set_read_timeout(Some(timeout))?;
            let mut name = String::new();
            s.read_to_string(&mut name)?;
            Ok(name)
        })
        .ok()
}

/// Now, as capture timestamps count it (since the Unix epoch).
pub fn wall_clock() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
}

/// A capture on the lab's bridge of the VRRP adverts and ARP (what every host hears).
pub struct Wire {
    capture: Capture,
}

/// One VRRP advert on the wire, as tshark decodes it.
#[derive(Debug, Clone)]
pub struct Advert {
    pub at: Duration,
    pub src: String,
    pub vrid: u8,
    pub priority: u8,
    pub addresses: Vec<String>,
}

/// One ARP frame on the wire, as tshark decodes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arp {
    pub at: Duration,
    pub eth_src: String,
    pub eth_dst: String,
    pub opcode: u16,
    pub sender_mac: String,
    pub sender_ip: String,
    pub target_ip: String,
}

/// What a stopped [`Wire`] saw.
pub struct Seen {
    pub adverts: Vec<Advert>,
    pub arps: Vec<Arp>,
}

impl Wire {
    pub fn start(lab: &Lab, name: &str) -> Wire {
        Wire {
            capture: lab.capture(name, "arp or ip proto 112").unwrap(),
        }
    }

    /// Stops the capture and decodes it with tshark.
    pub fn stop(self) -> Seen {
        decode(&self.capture.stop().unwrap())
    }
}

/// The priorities of `src`'s adverts for `vrid` on the wire (multicast: the bridge sees
/// them) during the next `window`, in order: what a router's priority and state are to its
/// peers, which a status file can only claim. A router in FAULT or BACKUP sends none.
pub fn priorities(lab: &Lab, src: &Host, vrid: u8, window: Duration) -> Vec<u8> {
    let wire = Wire::start(lab, &format!("priorities-{vrid}"));
    std::thread::sleep(window);
    let seen = wire.stop();
    let src = src.ipv4().to_string();
    seen.adverts_from(&src)
        .filter(|a| a.vrid == vrid)
        .map(|a| a.priority)
        .collect()
}

/// A pcap file's adverts and ARP frames, dissected by tshark.
pub fn decode(file: &Path) -> Seen {
    use ipi_net_tests::vrrp::dissect;
    let at = |s: &str| Duration::from_secs_f64(s.parse::<f64>().unwrap());
    let fields = [
        "frame.time_epoch",
        "ip.src",
        "vrrp.virt_rtr_id",
        "vrrp.prio",
        "vrrp.ip_addr",
    ];
    let adverts = dissect(file, "vrrp", &fields)
        .unwrap()
        .into_iter()
        .map(|f| Advert {
            at: at(&f[0]),
            src: f[1].clone(),
            vrid: f[2].parse().unwrap(),
            priority: f[3].parse().unwrap(),
            addresses: f[4].split(',').map(str::to_string).collect(),
        })
        .collect();
    let fields = [
        "frame.time_epoch",
        "eth.src",
        "eth.dst",
        "arp.opcode",
        "arp.src.hw_mac",
        "arp.src.proto_ipv4",
        "arp.dst.proto_ipv4",
    ];
    let arps = dissect(file, "arp", &fields)
        .unwrap()
        .into_iter()
        .map(|f| Arp {
            at: at(&f[0]),
            eth_src: f[1].clone(),
            eth_dst: f[2].clone(),
            opcode: f[3].parse().unwrap(),
            sender_mac: f[4].clone(),
            sender_ip: f[5].clone(),
            target_ip: f[6].clone(),
        })
        .collect();
    Seen { adverts, arps }
}

impl Seen {
    /// The gratuitous ARPs for `vip`: requests whose sender and target address are both `vip`.
    pub fn garps(&self, vip: IpAddr) -> Vec<&Arp> {
        let vip = vip.to_string();
        self.arps
            .iter()
            .filter(|a| a.sender_ip == vip && a.target_ip == vip)
            .collect()
    }

    /// Checks that the gratuitous ARPs for `vip` from `mac` in the second after `after` are one
    /// burst of `repeat` well-formed announcements: broadcast ARP requests, sender MAC `mac` (in the
    /// Ethernet header and the ARP body), sender and target address the VIP. Returns the time
    /// of the first.
    pub fn garp_burst(&self, vip: IpAddr, mac: &str, after: Duration, repeat: usize) -> Duration {
        let burst: Vec<&Arp> = self
            .garps(vip)
            .into_iter()
            .filter(|a| a.at > after && a.at < after + Duration::from_secs(1) && a.eth_src == mac)
            .collect();
        assert_eq!(burst.len(), repeat, "GARPs from {mac}: {burst:#?}\n{self}");
        for a in &burst {
            assert_eq!(a.opcode, 1, "a request: {a:?}");
            assert_eq!(a.eth_dst, "ff:ff:ff:ff:ff:ff", "{a:?}");
            assert_eq!(a.sender_mac, mac, "{a:?}");
        }
        burst[0].at
    }

    /// The adverts `src` sent.
    pub fn adverts_from<'a>(&'a self, src: &'a str) -> impl Iterator<Item = &'a Advert> + 'a {
        self.adverts.iter().filter(move |a| a.src == src)
    }
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for a in &self.adverts {
            writeln!(
                f,
                "{:.6} VRRP {} vrid {} prio {} {:?}",
                a.at.as_secs_f64(),
                a.src,
                a.vrid,
                a.priority,
                a.addresses
            )?;
        }
        for a in &self.arps {
            writeln!(
                f,
                "{:.6} ARP {} -> {} op {} {} {} -> {}",
                a.at.as_secs_f64(),
                a.eth_src,
                a.eth_dst,
                a.opcode,
                a.sender_mac,
                a.sender_ip,
                a.target_ip
            )?;
        }
        Ok(())
    }
}

/// Watches `host` for `window` with a capture on its own `eth0` (its unicast adverts too) and
/// panics if it sent a VRRP advert or a gratuitous ARP for `vip` at any moment of it: a router
/// that became master even for an instant would have sent both.
pub fn assert_silent(host: &Host, vip: IpAddr, window: Duration) {
    let capture = host.capture("silent", "ip proto 112 or arp").unwrap();
    std::thread::sleep(window);
    let seen = decode(&capture.stop().unwrap());
    let me = host.ipv4().to_string();
    let mac = mac(host);
    assert_eq!(
        seen.adverts_from(&me).count(),
        0,
        "{} advertised\n{seen}",
        host.name()
    );
    assert!(
        seen.garps(vip).iter().all(|a| a.eth_src != mac),
        "{} announced {vip}\n{seen}",
        host.name()
    );
}

/// One ICMPv6 neighbour advertisement on the wire, as tshark decodes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Na {
    pub at: Duration,
    pub eth_src: String,
    pub eth_dst: String,
    pub ip_src: String,
    pub ip_dst: String,
    pub hop_limit: u8,
    pub target: String,
    pub router: bool,
    pub solicited: bool,
    pub override_flag: bool,
    /// The Target Link-Layer Address option's MAC (empty without one).
    pub target_mac: String,
}

/// The neighbour advertisements (ICMPv6 type 136) of a pcap file, dissected by tshark.
pub fn neighbour_adverts(file: &Path) -> Vec<Na> {
    let fields = [
        "frame.time_epoch",
        "eth.src",
        "eth.dst",
        "ipv6.src",
        "ipv6.dst",
        "ipv6.hlim",
        "icmpv6.nd.na.target_address",
        "icmpv6.nd.na.flag.r",
        "icmpv6.nd.na.flag.s",
        "icmpv6.nd.na.flag.o",
        "icmpv6.opt.linkaddr",
    ];
    // tshark writes booleans as 1/0 or True/False, depending on its version.
    let flag = |s: &str| match s {
        "1" | "True" => true,
        "0" | "False" => false,
        other => panic!("a flag of {other:?}"),
    };
    ipi_net_tests::vrrp::dissect(file, "icmpv6.type == 136", &fields)
        .unwrap()
        .into_iter()
        .map(|f| Na {
            at: Duration::from_secs_f64(f[0].parse::<f64>().unwrap()),
            eth_src: f[1].clone(),
            eth_dst: f[2].clone(),
            ip_src: f[3].clone(),
            ip_dst: f[4].clone(),
            hop_limit: f[5].parse().unwrap(),
            target: f[6].clone(),
            router: flag(&f[7]),
            solicited: flag(&f[8]),
            override_flag: flag(&f[9]),
            target_mac: f[10].clone(),
        })
        .collect()
}

/// How often [`until`] looks.
const POLL: Duration = Duration::from_millis(10);

/// Where vrrpd keeps its state in `host` (`--state-dir`, as [`vrrpd`] and
/// [`ipi_net_tests::vrrp::Router`] start it).
pub fn state_dir(host: &Host) -> PathBuf {
    host.dir().join("state")
}

/// The configuration file [`vrrpd`] writes in `host`.
pub fn conf_path(host: &Host) -> PathBuf {
    host.dir().join("vrrpd.conf")
}

/// Writes `conf` for `host` and starts vrrpd on it, its state in [`state_dir`].
pub fn vrrpd(host: &Host, conf: &str) -> Daemon {
    vrrpd_with(host, conf, &[])
}

/// [`vrrpd`] with `extra` arguments after `run -f FILE --state-dir DIR`.
pub fn vrrpd_with(host: &Host, conf: &str, extra: &[&str]) -> Daemon {
    let path = conf_path(host);
    std::fs::write(&path, conf).unwrap();
    let state = state_dir(host);
    let mut args = vec![
        "run",
        "-f",
        path.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    host.spawn("vrrpd", env!("CARGO_BIN_EXE_vrrpd"), args)
        .unwrap()
}

/// What `host`'s state file for the instance VI_1 says (empty until it is written).
pub fn state(host: &Host) -> String {
    std::fs::read_to_string(state_dir(host).join("VI_1"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// `vrrpd status --json` of the vrrpd running in `host` with its state in [`state_dir`]; null
/// until the first status file is written.
pub fn status(host: &Host) -> serde_json::Value {
    let state = state_dir(host);
    let out = host
        .run(
            env!("CARGO_BIN_EXE_vrrpd"),
            ["status", "--json", "--state-dir", state.to_str().unwrap()],
        )
        .unwrap();
    if !out.success {
        return serde_json::Value::Null;
    }
    serde_json::from_str(&out.stdout).unwrap()
}

/// Something whose log a test prints when it fails: a [`Daemon`] or a [`Router`].
pub trait Logged {
    /// The log, as a failure message shows it.
    fn log_text(&self) -> String;
}

impl Logged for Daemon {
    fn log_text(&self) -> String {
        self.log()
    }
}

impl Logged for Router {
    fn log_text(&self) -> String {
        format!("--- {} ---\n{}", self.host.name(), self.daemon.log())
    }
}

/// The logs of `of`, one after the other.
pub fn logs<T: Logged>(of: &[&T]) -> String {
    of.iter()
        .map(|d| d.log_text())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Waits up to `timeout` for `f`, looking every 10 ms, and returns how long it took; panics
/// with `what` and the logs of `of` when it times out.
pub fn until<T: Logged>(
    what: &str,
    timeout: Duration,
    of: &[&T],
    f: impl FnMut() -> bool,
) -> Duration {
    wait_for(timeout, POLL, f)
        .unwrap_or_else(|| panic!("timed out waiting for {what}\n{}", logs(of)))
}

/// Two routers a and b, each with a [`Responder`], and a client, in `lab`.
pub fn two_routers(lab: &mut Lab) -> (Host, Host, Host, [Responder; 2]) {
    let (a, b) = (lab.host("a").unwrap(), lab.host("b").unwrap());
    let client = lab.host("client").unwrap();
    let answer = [&a, &b].map(Responder::start);
    (a, b, client, answer)
}

/// Three routers a, b and c, each with a [`Responder`], and a client, in `lab`.
pub fn three_routers(lab: &mut Lab) -> (Host, Host, Host, Host, [Responder; 3]) {
    let (a, b, c) = (
        lab.host("a").unwrap(),
        lab.host("b").unwrap(),
        lab.host("c").unwrap(),
    );
    let client = lab.host("client").unwrap();
    let answer = [&a, &b, &c].map(Responder::start);
    (a, b, c, client, answer)
}

/// Samples something from its own thread every few milliseconds until stopped: the client's
/// connections to a VIP (who answered each), or who holds it.
pub struct Sampler<T: Send + 'static> {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<(Instant, T)>>>,
    thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> Sampler<T> {
    /// Starts sampling with `sample`, about every 5 ms.
    pub fn start(mut sample: impl FnMut() -> T + Send + 'static) -> Sampler<T> {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (done, log) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let s = sample();
                log.lock().unwrap().push((Instant::now(), s));
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        Sampler {
            stop,
            seen,
            thread: Some(thread),
        }
    }

    /// How many samples so far.
    pub fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Stops and returns every sample with its time.
    pub fn stop(mut self) -> Vec<(Instant, T)> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// The client's connections to `vip`, each allowed 900 ms: far above a connection's time in
/// the lab on a loaded box, and below TCP's first SYN retransmission (1 s), so a SYN dropped
/// because the VIP was away even for a moment fails its attempt.
pub fn connections(client: &Host, vip: IpAddr) -> Sampler<Option<String>> {
    let client = client.clone();
    Sampler::start(move || answers_within(&client, vip, Duration::from_millis(900)))
}

/// Sends raw VRRP messages (the IP header is the kernel's) from inside `host`'s namespace to
/// `dst` (the VRRP group, or one router's address), each with its TTL: what a host on the LAN
/// can forge.
pub fn send_raw(host: &Host, dst: IpAddr, messages: Vec<(Vec<u8>, u32)>) {
    let netns = format!("/run/netns/{}", host.netns());
    let source = host.ipv4();
    std::thread::spawn(move || {
        let ns = std::fs::File::open(&netns).unwrap();
        nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        let socket = socket2::Socket::new(
            socket2::Domain::IPV4,
            socket2::Type::RAW,
            Some(socket2::Protocol::from(112)),
        )
        .unwrap();
        socket.set_multicast_if_v4(&source).unwrap();
        let to: SocketAddr = SocketAddr::new(dst, 0);
        for (bytes, ttl) in messages {
            socket.set_multicast_ttl_v4(ttl).unwrap();
            socket.set_ttl_v4(ttl).unwrap();
            socket.send_to(&bytes, &to.into()).unwrap();
        }
    })
    .join()
    .unwrap();
}
