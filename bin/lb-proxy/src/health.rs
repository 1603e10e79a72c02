//! Health checks: haproxy's counter semantics as plain data ([`Health`]) and the probes that
//! feed it (TCP connect, or an HTTP(S) request as `option httpchk`).
//!
//! The counter runs from 0 to `rise + fall - 1`; a server is UP while it is at least `rise`.
//! A failure takes one off, and a server that drops below `rise` goes straight to 0 (DOWN); a
//! success adds one, and a server that reaches `rise` goes straight to the top (UP). So a
//! server that starts UP at `rise` (haproxy's default) falls at its first failure, while one
//! that has been UP for a while takes `fall` failures in a row.

use std::net::SocketAddr;
use std::time::Duration;

use crate::config::model::{HttpCheck, InitState};

/// A server's health counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Health {
    value: u32,
    rise: u32,
    fall: u32,
    up: bool,
}

/// What a check result did to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing the rest of the proxy needs to know.
    None,
    /// The server is UP now.
    Up,
    /// The server is DOWN now.
    Down,
}

impl Health {
    /// A counter for `rise` and `fall` (at least 1 each), starting as `init` says.
    pub fn new(rise: u32, fall: u32, init: InitState) -> Health {
        let (rise, fall) = (rise.max(1), fall.max(1));
        let (value, up) = match init {
            InitState::FullyUp => (rise + fall - 1, true),
            InitState::Up => (rise, true),
            InitState::Down => (rise - 1, false),
            InitState::FullyDown => (0, false),
        };
        Health {
            value,
            rise,
            fall,
            up,
        }
    }

    /// UP or not.
    pub fn is_up(&self) -> bool {
        self.up
    }

    /// The counter (for the stats).
    pub fn value(&self) -> u32 {
        self.value
    }

    fn top(&self) -> u32 {
        self.rise + self.fall - 1
    }

    /// Steady: fully UP, or fully DOWN.
    pub fn steady(&self) -> bool {
        (self.up && self.value == self.top()) || (!self.up && self.value == 0)
    }

    /// Applies one check result.
    pub fn record(&mut self, passed: bool) -> Change {
        if passed {
            if self.value < self.top() {
                self.value += 1;
                if self.value >= self.rise {
                    self.value = self.top();
                }
            }
            if !self.up && self.value >= self.rise {
                self.up = true;
                return Change::Up;
            }
        } else {
            if self.value > 0 {
                self.value -= 1;
                if self.value < self.rise {
                    self.value = 0;
                }
            }
            if self.up && self.value < self.rise {
                self.up = false;
                return Change::Down;
            }
        }
        Change::None
    }

    /// The time to the next check: `inter` while steady UP, `downinter` while steady DOWN,
    /// `fastinter` in between (haproxy's choice; the latter two default to `inter`).
    pub fn interval(
        &self,
        inter: Duration,
        fast: Option<Duration>,
        down: Option<Duration>,
    ) -> Duration {
        if self.up && self.value == self.top() {
            inter
        } else if !self.up && self.value == 0 {
            down.unwrap_or(inter)
        } else {
            fast.unwrap_or(inter)
        }
    }
}

/// Why a check failed (what the stats show as the last check).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The TCP connection failed.
    #[error("connect: {0}")]
    Connect(std::io::Error),
    /// The TCP connection took too long.
    #[error("connect: no answer within {0:?}")]
    ConnectTimeout(Duration),
    /// The TLS handshake took too long.
    #[error("no handshake within {0:?}")]
    HandshakeTimeout(Duration),
    /// The HTTP answer took too long.
    #[error("no answer within {0:?}")]
    AnswerTimeout(Duration),
    /// Connecting, the handshake or the request failed.
    #[error(transparent)]
    Http(#[from] crate::http::Error),
    /// The server answered with a status of 400 or more.
    #[error("HTTP status {0}")]
    Status(u16),
}

/// What one check does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// Connect, then close.
    Tcp,
    /// Connect and complete a TLS handshake (`check-ssl` without `option httpchk`, haproxy's
    /// layer-6 check), certificate not verified.
    Tls,
    /// Send an HTTP request (over TLS when `tls`) and pass on 2xx or 3xx.
    Http {
        /// The request head, written once.
        head: String,
        /// TLS (`check-ssl`), without verifying the certificate (`verify none`).
        tls: bool,
    },
}

impl Probe {
    /// The probe of `option httpchk` (or a TCP connect without it), as haproxy sends it: the
    /// request line and no `Host` header.
    pub fn new(httpchk: Option<&HttpCheck>, tls: bool) -> Probe {
        match httpchk {
            None if !tls => Probe::Tcp,
            None => Probe::Tls,
            Some(c) => Probe::Http {
                head: crate::http::head(&c.method, &c.uri, &c.version, None),
                tls,
            },
        }
    }

    /// Runs the probe against `address`: connecting within `connect`, answering within
    /// `answer` after that. Ok when it passed; Err says why not.
    pub async fn run(
        &self,
        address: SocketAddr,
        connect: Duration,
        answer: Duration,
    ) -> Result<(), CheckError> {
        match self {
            Probe::Tcp => {
                match tokio::time::timeout(connect, tokio::net::TcpStream::connect(address)).await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => Err(CheckError::Connect(e)),
                    Err(_) => Err(CheckError::ConnectTimeout(connect)),
                }
            }
            Probe::Tls => {
                let host = address.ip().to_string();
                tokio::time::timeout(connect + answer, crate::http::connect(address, Some(&host)))
                    .await
                    .map_err(|_| CheckError::HandshakeTimeout(connect + answer))??;
                Ok(())
            }
            Probe::Http { head, tls } => {
                let host = address.ip().to_string();
                let tls_host = tls.then_some(host.as_str());
                let got = tokio::time::timeout(
                    connect + answer,
                    crate::http::request(address, tls_host, head),
                )
                .await
                .map_err(|_| CheckError::AnswerTimeout(connect + answer))??;
                match got.status {
                    200..=399 => Ok(()),
                    s => Err(CheckError::Status(s)),
                }
            }
        }
    }
}

/// When the first check of server `index` of `count` runs: spread evenly over one interval,
/// as haproxy does, so that checks do not all go at once.
pub fn first_delay(index: usize, count: usize, inter: Duration) -> Duration {
    if count == 0 {
        return Duration::ZERO;
    }
    inter.mul_f64(index as f64 / count as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(h: &mut Health, results: &str) -> String {
        results
            .chars()
            .map(|c| match h.record(c == '+') {
                Change::Up => 'U',
                Change::Down => 'D',
                Change::None => '.',
            })
            .collect()
    }

    #[test]
    fn a_server_that_starts_up_falls_at_its_first_failure() {
        let mut h = Health::new(3, 2, InitState::Up);
        assert!(h.is_up());
        assert_eq!(run(&mut h, "-"), "D");
        assert_eq!(run(&mut h, "++-+++"), ".....U");
    }

    #[test]
    fn once_fully_up_it_takes_fall_failures_in_a_row() {
        let mut h = Health::new(3, 2, InitState::Up);
        assert_eq!(run(&mut h, "+"), ".");
        assert!(h.steady());
        // A success between failures starts the count over: this failure is the second in
        // a row.
        assert_eq!(run(&mut h, "-+-"), "...");
        assert_eq!(run(&mut h, "-"), "D");
        // Down: rise successes in a row bring it back; a failure on the way starts over.
        assert_eq!(run(&mut h, "++-+++"), ".....U");
        assert_eq!(h.value(), 4);
    }

    #[test]
    fn init_states() {
        let mut h = Health::new(3, 2, InitState::FullyUp);
        assert_eq!(run(&mut h, "--"), ".D");
        let mut h = Health::new(3, 2, InitState::Down);
        assert!(!h.is_up());
        assert_eq!(run(&mut h, "+"), "U");
        let mut h = Health::new(3, 2, InitState::FullyDown);
        assert_eq!(run(&mut h, "+++"), "..U");
        // rise 1 fall 1: every result decides.
        let mut h = Health::new(1, 1, InitState::Up);
        assert_eq!(run(&mut h, "-+-+"), "DUDU");
    }

    #[test]
    fn intervals_follow_the_state() {
        let (i, f, d) = (
            Duration::from_secs(2),
            Duration::from_millis(500),
            Duration::from_secs(5),
        );
        let mut h = Health::new(3, 2, InitState::Up);
        assert_eq!(h.interval(i, Some(f), Some(d)), f, "UP but not fully");
        h.record(true);
        assert_eq!(h.interval(i, Some(f), Some(d)), i);
        h.record(false);
        assert_eq!(h.interval(i, Some(f), Some(d)), f);
        h.record(false);
        assert_eq!(h.interval(i, Some(f), Some(d)), d, "fully DOWN");
        h.record(true);
        assert_eq!(h.interval(i, Some(f), Some(d)), f);
        assert_eq!(h.interval(i, None, None), i);
    }

    #[test]
    fn first_checks_are_spread_over_an_interval() {
        let inter = Duration::from_secs(1);
        let d: Vec<_> = (0..4)
            .map(|i| first_delay(i, 4, inter).as_millis())
            .collect();
        assert_eq!(d, [0, 250, 500, 750]);
    }

    #[test]
    fn probes_are_haproxys_requests() {
        let c = HttpCheck {
            method: "GET".into(),
            uri: "/readyz".into(),
            version: "HTTP/1.0".into(),
        };
        let Probe::Http { head, tls } = Probe::new(Some(&c), true) else {
            panic!("an HTTP probe")
        };
        assert!(tls && head.starts_with("GET /readyz HTTP/1.0\r\n"));
        assert_eq!(Probe::new(None, false), Probe::Tcp);
        assert_eq!(Probe::new(None, true), Probe::Tls);
    }
}
