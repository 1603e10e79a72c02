//! The haproxy.cfg subset lb-proxy runs, as plain data, with haproxy's defaults. A proxy's
//! settings are resolved at parse time: what a `defaults` section sets, every proxy after it
//! inherits, as in haproxy.

use std::net::SocketAddr;
use std::time::Duration;

use ipi_core::secret::Secret;

pub use ipi_core::place::Location;

/// A whole configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Config {
    /// `global`.
    pub global: Global,
    /// `frontend`, `backend` and `listen` sections, in file order.
    pub proxies: Vec<Proxy>,
    /// `resolvers` sections, in file order.
    pub resolvers: Vec<Resolvers>,
}

impl Config {
    /// The proxy called `name` (a backend or listen section before a frontend: haproxy lets a
    /// frontend and a backend share a name, and a name found this way is one to balance over).
    pub fn proxy(&self, name: &str) -> Option<&Proxy> {
        self.backend(name)
            .or_else(|| self.proxies.iter().find(|p| p.name == name))
    }

    /// The backend or listen section called `name`.
    pub fn backend(&self, name: &str) -> Option<&Proxy> {
        self.proxies
            .iter()
            .find(|p| p.name == name && p.kind != Kind::Frontend)
    }

    /// The `resolvers` section called `name`.
    pub fn resolvers(&self, name: &str) -> Option<&Resolvers> {
        self.resolvers.iter().find(|r| r.name == name)
    }
}

/// A `resolvers` section: the DNS servers that re-resolve server names at run time, and how
/// long an answer holds (haproxy's defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolvers {
    /// Its name, which servers give with `resolvers NAME`.
    pub name: String,
    /// `nameserver NAME ADDR:PORT` lines.
    pub nameservers: Vec<(String, SocketAddr)>,
    /// `parse-resolv-conf`: the nameservers of /etc/resolv.conf too.
    pub resolv_conf: bool,
    /// `hold valid` (default 10 s): how long an answer is used before asking again.
    pub hold_valid: Duration,
    /// `hold nx|other|refused|timeout` (default 30 s each): how long a server keeps its last
    /// address after the DNS fails to give one (the longest of the four, as lb-proxy does not
    /// tell the failures apart).
    pub hold_other: Duration,
    /// `resolve_retries` (default 3): queries sent before a resolution fails.
    pub resolve_retries: u32,
    /// `timeout resolve` (default 1 s): the time between two resolutions of a name.
    pub timeout_resolve: Duration,
    /// `timeout retry` (default 1 s): the time before a query without answer is sent again.
    pub timeout_retry: Duration,
    /// `accepted_payload_size` (default 512, EDNS0).
    pub accepted_payload_size: u16,
    /// Where the section starts.
    pub location: Location,
}

impl Resolvers {
    /// A section with haproxy's defaults.
    pub fn new(name: &str, location: &Location) -> Resolvers {
        Resolvers {
            name: name.to_string(),
            nameservers: Vec::new(),
            resolv_conf: false,
            hold_valid: Duration::from_secs(10),
            hold_other: Duration::from_secs(30),
            resolve_retries: 3,
            timeout_resolve: Duration::from_secs(1),
            timeout_retry: Duration::from_secs(1),
            accepted_payload_size: 512,
            location: location.clone(),
        }
    }
}

/// `global`: what changes lb-proxy's behaviour.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Global {
    /// `maxconn`: the process-wide connection limit.
    pub maxconn: Option<u32>,
    /// `stats socket PATH ...`: accepted; lb-proxy has no runtime API socket.
    pub stats_socket: Option<String>,
    /// `spread-checks N` (0-50 %): each check interval moved by up to N % either way, so that
    /// the checks of many servers do not fall together.
    pub spread_checks: u32,
}

/// What kind of section a proxy is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `frontend`: listens, forwards to a backend.
    Frontend,
    /// `backend`: servers.
    Backend,
    /// `listen`: both.
    Listen,
}

/// `mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Layer 4 (haproxy's default... in OpenShift's defaults too).
    #[default]
    Tcp,
    /// HTTP: only for monitor and stats listeners here.
    Http,
}

/// The timeouts of haproxy's `timeout` keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timeouts {
    /// `timeout connect`.
    pub connect: Option<Duration>,
    /// `timeout client`.
    pub client: Option<Duration>,
    /// `timeout server`.
    pub server: Option<Duration>,
    /// `timeout tunnel`.
    pub tunnel: Option<Duration>,
    /// `timeout client-fin`.
    pub client_fin: Option<Duration>,
    /// `timeout server-fin`.
    pub server_fin: Option<Duration>,
    /// `timeout queue`.
    pub queue: Option<Duration>,
    /// `timeout check`.
    pub check: Option<Duration>,
    /// `timeout http-request`.
    pub http_request: Option<Duration>,
}

/// One `bind`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bind {
    /// The address: `:::9445` is every IPv6 address, `*:80` or `:80` every IPv4 one.
    pub address: SocketAddr,
    /// `v4v6`: an IPv6 socket that takes IPv4 too.
    pub v4v6: bool,
    /// `v6only`.
    pub v6only: bool,
    /// The host name as written (`localhost`), when it was a name.
    pub host: Option<String>,
}

/// `option httpchk METHOD URI [VERSION]`, with `http-check connect|send|expect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCheck {
    /// The method (default OPTIONS).
    pub method: String,
    /// The URI (default /).
    pub uri: String,
    /// The version (default HTTP/1.0).
    pub version: String,
    /// `http-check send hdr NAME VALUE`: headers sent with the request.
    pub headers: Vec<(String, String)>,
    /// `http-check connect ssl`: the check speaks TLS whatever the server line says.
    pub ssl: bool,
    /// `http-check connect port N`: the port checked instead of the server's.
    pub port: Option<u16>,
    /// `http-check expect`: None passes a status of 2xx or 3xx, as haproxy does.
    pub expect: Option<HttpExpect>,
}

impl HttpCheck {
    /// `option httpchk` with its values.
    pub fn new(method: &str, uri: &str, version: &str) -> HttpCheck {
        HttpCheck {
            method: method.to_string(),
            uri: uri.to_string(),
            version: version.to_string(),
            headers: Vec::new(),
            ssl: false,
            port: None,
            expect: None,
        }
    }
}

/// `http-check expect [!] status|rstatus|string|rstring VALUE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpExpect {
    /// `!`: passes when the match fails.
    pub negate: bool,
    /// What is matched.
    pub what: HttpMatch,
}

/// What `http-check expect` matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpMatch {
    /// `status 200,300-399`: codes and ranges.
    Status(Vec<(u16, u16)>),
    /// `rstatus REGEX`: the status code as text.
    Rstatus(String),
    /// `string TEXT`: in the body.
    String(String),
    /// `rstring REGEX`: the body.
    Rstring(String),
}

/// One `tcp-check` rule (haproxy 2.6's, as `option tcp-check` runs them in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcpRule {
    /// `tcp-check connect [port N] [ssl]`: a new connection (a rule list without one first
    /// opens one to the server before its first rule).
    Connect {
        /// The port, instead of the server's.
        port: Option<u16>,
        /// TLS on it (the certificate not verified).
        ssl: bool,
    },
    /// `tcp-check send STRING` or `send-binary HEX`: bytes written; what was read so far
    /// is forgotten.
    Send(Vec<u8>),
    /// `tcp-check expect ...`.
    Expect(TcpExpect),
}

/// `tcp-check expect [min-recv N] [!] string|rstring|binary|rbinary PATTERN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpExpect {
    /// `!`: passes when the pattern is not found once nothing more can come.
    pub negate: bool,
    /// `min-recv N`: judge once N bytes are read, without waiting for more.
    pub min_recv: Option<usize>,
    /// The pattern.
    pub pattern: Pattern,
}

/// What a `tcp-check expect` looks for in what the server sent since the last send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// `string TEXT`: these bytes anywhere.
    String(Vec<u8>),
    /// `binary HEX`: these bytes anywhere.
    Binary(Vec<u8>),
    /// `rstring REGEX`: a regular expression on the bytes as text.
    Rstring(String),
    /// `rbinary REGEX`: a regular expression on the bytes written as upper-case hex.
    Rbinary(String),
}

/// `monitor fail if { nbsrv(BACKEND) lt N }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorFail {
    /// The backend counted.
    pub backend: String,
    /// Fewer UP servers than this fail the monitor.
    pub less_than: u32,
}

/// The stats page. Every `stats` keyword enables it, as in haproxy; written in `defaults`, they
/// are every following proxy's start.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stats {
    /// `stats enable` (or any other `stats` keyword).
    pub enabled: bool,
    /// `stats uri`.
    pub uri: Option<String>,
    /// `stats auth USER:PASS` (repeatable); the password printed redacted.
    pub auth: Vec<(String, Secret)>,
    /// `stats hide-version`.
    pub hide_version: bool,
    /// `stats refresh`.
    pub refresh: Option<Duration>,
}

/// `init-state`: where a server's health counter starts (haproxy's semantics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InitState {
    /// `fully-up`: UP, and only `fall` failures in a row take it down.
    FullyUp,
    /// `up` (the default): UP, but the first failure takes it down.
    #[default]
    Up,
    /// `down`: DOWN, and the first success brings it up.
    Down,
    /// `fully-down`: DOWN until `rise` successes in a row.
    FullyDown,
}

impl InitState {
    /// The keyword's value.
    pub fn as_str(self) -> &'static str {
        match self {
            InitState::FullyUp => "fully-up",
            InitState::Up => "up",
            InitState::Down => "down",
            InitState::FullyDown => "fully-down",
        }
    }
}

/// `on-error`: what `error-limit` consecutive errors seen by `observe` do (haproxy's
/// `__health_adjust`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// `fastinter`: only check sooner.
    FastInter,
    /// `fail-check` (the default): as one failed check.
    #[default]
    FailCheck,
    /// `sudden-death`: as a failed check that leaves one more before DOWN.
    SuddenDeath,
    /// `mark-down`: DOWN at once.
    MarkDown,
}

impl OnError {
    /// Every value, for the parser and its errors.
    pub const ALL: [OnError; 4] = [
        OnError::FastInter,
        OnError::FailCheck,
        OnError::SuddenDeath,
        OnError::MarkDown,
    ];

    /// The keyword's value.
    pub fn as_str(self) -> &'static str {
        match self {
            OnError::FastInter => "fastinter",
            OnError::FailCheck => "fail-check",
            OnError::SuddenDeath => "sudden-death",
            OnError::MarkDown => "mark-down",
        }
    }
}

/// `retry-on`: the failures a connection is tried again after. In `mode tcp` haproxy acts on
/// `conn-failure` only (the others need the HTTP layer); lb-proxy reads them all and acts
/// as haproxy does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryOn {
    /// `conn-failure`: the connection could not be set up (refused, timed out).
    pub conn_failure: bool,
    /// `empty-response` (HTTP only in haproxy).
    pub empty_response: bool,
    /// `junk-response` (HTTP only).
    pub junk_response: bool,
    /// `response-timeout` (HTTP only).
    pub response_timeout: bool,
    /// `0rtt-rejected` (HTTP only).
    pub zero_rtt_rejected: bool,
}

impl Default for RetryOn {
    fn default() -> RetryOn {
        RetryOn {
            conn_failure: true,
            ..RetryOn::NONE
        }
    }
}

impl RetryOn {
    /// `retry-on none`.
    pub const NONE: RetryOn = RetryOn {
        conn_failure: false,
        empty_response: false,
        junk_response: false,
        response_timeout: false,
        zero_rtt_rejected: false,
    };

    /// `all-retryable-errors` (what haproxy's covers among the keywords lb-proxy reads).
    pub const ALL: RetryOn = RetryOn {
        conn_failure: true,
        empty_response: true,
        junk_response: true,
        response_timeout: true,
        zero_rtt_rejected: true,
    };

    /// The keywords that are set, in haproxy's order (`none` when none is).
    pub fn words(&self) -> Vec<&'static str> {
        let all = [
            (self.conn_failure, "conn-failure"),
            (self.empty_response, "empty-response"),
            (self.junk_response, "junk-response"),
            (self.response_timeout, "response-timeout"),
            (self.zero_rtt_rejected, "0rtt-rejected"),
        ];
        let set: Vec<_> = all.iter().filter(|(on, _)| *on).map(|(_, w)| *w).collect();
        if set.is_empty() {
            vec!["none"]
        } else {
            set
        }
    }
}

/// `#lb-proxy: race-connect DELAY [losses N]`, an lb-proxy extension: a connection attempt
/// with no answer after `delay` races a second attempt to the next server; the first to
/// connect wins. A server that loses `losses` races in a row is marked DOWN (passive health;
/// its checks bring it back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Race {
    /// How long an attempt runs alone.
    pub delay: Duration,
    /// Races lost in a row that mark a checked server DOWN (0: never).
    pub losses: u32,
}

/// `server NAME ADDR:PORT [options]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// Its name.
    pub name: String,
    /// Where it listens.
    pub address: SocketAddr,
    /// `weight` (default 1, 0-256).
    pub weight: u32,
    /// `check`: health-checked.
    pub check: bool,
    /// `check-ssl`: the check speaks TLS.
    pub check_ssl: bool,
    /// `verify none` (the only verification lb-proxy does is none).
    pub verify_none: bool,
    /// `inter` (default 2 s).
    pub inter: Duration,
    /// `fastinter` (default: inter).
    pub fastinter: Option<Duration>,
    /// `downinter` (default: inter).
    pub downinter: Option<Duration>,
    /// `rise` (default 2).
    pub rise: u32,
    /// `fall` (default 3).
    pub fall: u32,
    /// `slowstart`.
    pub slowstart: Option<Duration>,
    /// `on-marked-down shutdown-sessions`.
    pub shutdown_sessions_on_down: bool,
    /// `init-state`: how the server starts.
    pub init_state: InitState,
    /// `observe layer4`: connection errors of client traffic count against the server
    /// (passive health).
    pub observe: bool,
    /// `error-limit` (default 10): consecutive errors before `on-error` acts.
    pub error_limit: u32,
    /// `on-error` (default `fail-check`).
    pub on_error: OnError,
    /// `maxconn`: accepted; lb-proxy does not queue per server (a warning says so).
    pub maxconn: Option<u32>,
    /// `backup`: used only while no other server of the backend can be.
    pub backup: bool,
    /// The host name when the address was one (`master0.example.com:6443`).
    pub fqdn: Option<String>,
    /// `resolvers NAME`: the section that re-resolves `fqdn` at run time.
    pub resolvers: Option<String>,
    /// `init-addr`: where the first address comes from (haproxy's default `last,libc`).
    pub init_addr: Vec<InitAddr>,
    /// `resolve-prefer ipv4|ipv6` (haproxy's default: ipv6).
    pub prefer_ipv4: bool,
    /// Where it was written.
    pub location: Location,
}

impl Server {
    /// A server line's settings before its options: haproxy's defaults.
    pub fn defaults(name: &str, address: SocketAddr, at: &Location) -> Server {
        Server {
            name: name.to_string(),
            address,
            weight: 1,
            check: false,
            check_ssl: false,
            verify_none: false,
            inter: Duration::from_secs(2),
            fastinter: None,
            downinter: None,
            rise: 2,
            fall: 3,
            slowstart: None,
            shutdown_sessions_on_down: false,
            init_state: InitState::Up,
            observe: false,
            error_limit: 10,
            on_error: OnError::FailCheck,
            maxconn: None,
            backup: false,
            fqdn: None,
            resolvers: None,
            init_addr: vec![InitAddr::Last, InitAddr::Libc],
            prefer_ipv4: false,
            location: at.clone(),
        }
    }
}

/// One method of `init-addr`, tried in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitAddr {
    /// `last`: the address of a server-state file (lb-proxy keeps none: skipped).
    Last,
    /// `libc`: the system resolver, at start.
    Libc,
    /// `none`: start without an address (the server is in maintenance until resolved).
    None,
    /// An address.
    Ip(std::net::IpAddr),
}

/// A `frontend`, `backend` or `listen` section with what it inherited from `defaults`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// `mode`.
    pub mode: Mode,
    /// `maxconn` (haproxy's default for a frontend: 2000 when neither it nor defaults say).
    pub maxconn: Option<u32>,
    /// `retries` (default 3).
    pub retries: u32,
    /// `option redispatch [N]`: None without it; Some(N), N as haproxy reads it (`-1`, the
    /// bare option: the last retry; `P` > 0: every Pth retry; `-N`: the Nth retry before the
    /// last; 0: only what haproxy does for round robin anyway, see `daemon::session`).
    pub redispatch: Option<i32>,
    /// `retry-on`: what is retried (default `conn-failure`).
    pub retry_on: RetryOn,
    /// `#lb-proxy: race-connect`: an lb-proxy extension (None: off).
    pub race: Option<Race>,
    /// `#lb-proxy: replay-unanswered on|off`, an lb-proxy extension: the client's first bytes
    /// go to another server when a server closes without answering them, once they hold
    /// something whole (a server closing an idle client, or one that sent part of a TLS
    /// handshake, is passed on to the client and counts nothing against the server).
    pub replay_unanswered: bool,
    /// `option tcp-smart-accept` (a frontend's): the ACK of a client's first bytes waits to
    /// leave with the answer (TCP_QUICKACK off on the listening socket). Off by default, as
    /// in haproxy's `mode tcp`: a client that writes its request in two pieces with Nagle's
    /// algorithm on waits for that ACK, up to the delayed-ACK timer (40 ms and more).
    pub smart_accept: bool,
    /// `option tcp-smart-connect` (a backend's): when the client's first bytes are there
    /// already, they leave with the last ACK of the handshake to the server (TCP_QUICKACK off
    /// before connect). On by default in lb-proxy, off in haproxy; `no option
    /// tcp-smart-connect` turns it off.
    pub smart_connect: bool,
    /// The timeouts.
    pub timeouts: Timeouts,
    /// `bind` lines.
    pub binds: Vec<Bind>,
    /// `default_backend`.
    pub default_backend: Option<String>,
    /// TLS routing by server name: `tcp-request`, `acl`, `use_backend`.
    pub routing: super::routing::Routing,
    /// `option httpchk`.
    pub httpchk: Option<HttpCheck>,
    /// `option tcp-check` with its rules, or `option ssl-hello-chk` (None: neither, or
    /// `option httpchk` came last).
    pub tcp_check: Option<Vec<TcpRule>>,
    /// `balance`.
    pub balance: Balance,
    /// `hash-type map-based avalanche`: the hashed address goes through haproxy's avalanche
    /// function before it picks a server (`balance source`).
    pub avalanche: bool,
    /// `hash-type consistent`: `balance source` looks the hash up on haproxy's ring rather
    /// than its map.
    pub consistent: bool,
    /// `option allbackups`: all backup servers take turns, not only the first.
    pub allbackups: bool,
    /// `monitor-uri`.
    pub monitor_uri: Option<String>,
    /// `monitor fail if { nbsrv(B) lt N }`.
    pub monitor_fail: Option<MonitorFail>,
    /// The stats page.
    pub stats: Stats,
    /// `server` lines.
    pub servers: Vec<Server>,
    /// Where the section starts.
    pub location: Location,
}

impl Proxy {
    /// A section as its first line makes it, before any setting: haproxy's defaults (3
    /// retries, round robin, no servers, binds, checks or stats), but for lb-proxy's smart
    /// connect.
    pub fn new(name: &str, kind: Kind, mode: Mode, location: Location) -> Proxy {
        Proxy {
            name: name.to_string(),
            kind,
            mode,
            maxconn: None,
            retries: 3,
            redispatch: None,
            retry_on: RetryOn::default(),
            race: None,
            replay_unanswered: false,
            smart_accept: false,
            smart_connect: true,
            timeouts: Timeouts::default(),
            binds: Vec::new(),
            default_backend: None,
            routing: Default::default(),
            httpchk: None,
            tcp_check: None,
            balance: Balance::RoundRobin,
            avalanche: false,
            consistent: false,
            allbackups: false,
            monitor_uri: None,
            monitor_fail: None,
            stats: Stats::default(),
            servers: Vec::new(),
            location,
        }
    }
}

/// `balance`: how a backend picks a server for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Balance {
    /// `roundrobin`, haproxy's default: each server in turn, as often as its weight says.
    #[default]
    RoundRobin,
    /// `leastconn`: the server with the fewest connections for its weight.
    LeastConn,
    /// `source` with `hash-type map-based` (haproxy's default): the client's address hashed
    /// onto a map of the servers by weight, so one client reaches one server while the set
    /// of servers UP stays the same.
    Source,
}
