//! haproxy's rule-based checks: `tcp-check` rules run in order on a connection (and
//! `option ssl-hello-chk`, two such rules), and the verdict of `http-check expect` on an
//! answer. [`judge`] and [`HttpJudge::passes`] are haproxy's decisions (`tcpcheck_eval_expect`,
//! `tcpcheck_eval_expect_http`) as plain functions; [`run`] is the IO around them.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::config::model::{HttpExpect, HttpMatch, Pattern, TcpExpect, TcpRule};
use crate::http::Answer;

/// haproxy's check buffer (`tune.bufsize`): a rule judges at most this much, and a full
/// buffer counts as the last read.
pub const BUFFER: usize = 16 * 1024;

/// A regular expression compared by its text (so that probes compare). The parser refuses
/// one that does not compile; should one come from elsewhere, it matches nothing.
#[derive(Debug, Clone)]
pub struct Regex {
    text: String,
    compiled: Option<regex::bytes::Regex>,
}

impl Regex {
    /// `text` compiled.
    pub fn new(text: &str) -> Regex {
        Regex {
            text: text.to_string(),
            compiled: regex::bytes::Regex::new(text).ok(),
        }
    }

    fn matches(&self, bytes: &[u8]) -> bool {
        self.compiled.as_ref().is_some_and(|r| r.is_match(bytes))
    }
}

impl PartialEq for Regex {
    fn eq(&self, other: &Regex) -> bool {
        self.text == other.text
    }
}

impl Eq for Regex {}

/// What an expect rule looks for, ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Matcher {
    /// These bytes anywhere (`string`, `binary`).
    Bytes(Vec<u8>),
    /// The regex on the bytes (`rstring`).
    Text(Regex),
    /// The regex on the bytes as upper-case hex (`rbinary`, as haproxy's `dump_binary`).
    Hex(Regex),
}

/// A `tcp-check expect` ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    negate: bool,
    min_recv: Option<usize>,
    matcher: Matcher,
}

/// A `tcp-check` rule ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Connect to the server (at `port` when given), over TLS with `ssl`.
    Connect {
        /// The port instead of the server's.
        port: Option<u16>,
        /// TLS.
        ssl: bool,
    },
    /// Write these bytes, forget what was read.
    Send(Vec<u8>),
    /// Read until the expectation is decided.
    Expect(Expect),
}

/// The rules of `option tcp-check` ready to run: a first connect added when the rules do
/// not start with one (as haproxy), TLS on it with `tls` (`check-ssl`).
pub fn steps(rules: &[TcpRule], tls: bool) -> Vec<Step> {
    let mut out = Vec::with_capacity(rules.len() + 1);
    if !matches!(rules.first(), Some(TcpRule::Connect { .. })) {
        out.push(Step::Connect {
            port: None,
            ssl: tls,
        });
    }
    for rule in rules {
        out.push(match rule {
            TcpRule::Connect { port, ssl } => Step::Connect {
                port: *port,
                ssl: *ssl,
            },
            TcpRule::Send(data) => Step::Send(data.clone()),
            TcpRule::Expect(e) => Step::Expect(expect(e)),
        });
    }
    out
}

fn expect(e: &TcpExpect) -> Expect {
    let matcher = match &e.pattern {
        Pattern::String(b) | Pattern::Binary(b) => Matcher::Bytes(b.clone()),
        Pattern::Rstring(r) => Matcher::Text(Regex::new(r)),
        Pattern::Rbinary(r) => Matcher::Hex(Regex::new(r)),
    };
    Expect {
        negate: e.negate,
        min_recv: e.min_recv,
        matcher,
    }
}

/// What an expect rule decides on what was read so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judgement {
    /// Read more.
    Wait,
    /// The rule passed: on to the next.
    Pass,
    /// The check failed.
    Fail,
}

/// haproxy's `tcpcheck_eval_expect`: `read` is what came since the last send or connect,
/// `last` whether nothing more can come (the server closed, or the buffer is full).
pub fn judge(e: &Expect, read: &[u8], last: bool) -> Judgement {
    let last = last || read.len() >= BUFFER;
    if !last {
        let needed = match &e.matcher {
            Matcher::Bytes(b) => b.len(),
            Matcher::Text(_) | Matcher::Hex(_) => 0,
        };
        if read.len() < needed || e.min_recv.is_some_and(|n| read.len() < n) {
            return Judgement::Wait;
        }
    }
    let found = match &e.matcher {
        Matcher::Bytes(b) => read.windows(b.len().max(1)).any(|w| w == b.as_slice()),
        Matcher::Text(r) => r.matches(read),
        Matcher::Hex(r) => {
            let hex: String = read.iter().map(|b| format!("{b:02X}")).collect();
            r.matches(hex.as_bytes())
        }
    };
    // Without min-recv a miss waits for more; with it, the bytes asked for decide.
    if !found && !last && e.min_recv.is_none() {
        return Judgement::Wait;
    }
    if found != e.negate {
        Judgement::Pass
    } else {
        Judgement::Fail
    }
}

/// Why a rule-based check failed.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// A connect rule's connection or handshake failed.
    #[error("connect to {0}: {1}")]
    Connect(SocketAddr, String),
    /// Writing failed.
    #[error("send: {0}")]
    Send(std::io::Error),
    /// Reading failed.
    #[error("receive: {0}")]
    Receive(std::io::Error),
    /// Rule `n` (from 1) found what it did not expect.
    #[error("tcp-check rule {0}: unexpected answer {1:?}")]
    Unexpected(usize, String),
    /// The check ran out of time at rule `n`.
    #[error("tcp-check rule {0}: no answer within {1:?}")]
    Timeout(usize, Duration),
    /// A send or expect before any connection.
    #[error("tcp-check rule {0}: no connection")]
    NoConnection(usize),
}

/// Something to read and write, plain or TLS.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Runs `steps` against the server at `address`, each connection within `connect` and all
/// of it by `deadline`.
pub async fn run(
    steps: &[Step],
    address: SocketAddr,
    connect: Duration,
    deadline: Instant,
) -> Result<(), RuleError> {
    let mut conn: Option<Box<dyn Stream>> = None;
    let mut read = Vec::new();
    let mut last = false;
    for (i, step) in steps.iter().enumerate() {
        let n = i + 1;
        let left = deadline.saturating_duration_since(Instant::now());
        match step {
            Step::Connect { port, ssl } => {
                let to = SocketAddr::new(address.ip(), port.unwrap_or(address.port()));
                conn = Some(open(to, *ssl, connect.min(left)).await?);
                (read, last) = (Vec::new(), false);
            }
            Step::Send(data) => {
                let c = conn.as_mut().ok_or(RuleError::NoConnection(n))?;
                c.write_all(data).await.map_err(RuleError::Send)?;
                c.flush().await.map_err(RuleError::Send)?;
                (read, last) = (Vec::new(), false);
            }
            Step::Expect(e) => {
                let c = conn.as_mut().ok_or(RuleError::NoConnection(n))?;
                let reading = until_decided(c, e, &mut read, &mut last, n);
                tokio::time::timeout(left, reading)
                    .await
                    .map_err(|_| RuleError::Timeout(n, left))??;
            }
        }
    }
    Ok(())
}

async fn open(to: SocketAddr, ssl: bool, within: Duration) -> Result<Box<dyn Stream>, RuleError> {
    let host = to.ip().to_string();
    let opening = async {
        let tcp = tokio::net::TcpStream::connect(to)
            .await
            .map_err(|e| e.to_string())?;
        let conn = crate::http::over(tcp, to, ssl.then_some(host.as_str()))
            .await
            .map_err(|e| e.to_string())?;
        Ok::<Box<dyn Stream>, String>(match conn {
            crate::http::Conn::Plain(s) => Box::new(s),
            crate::http::Conn::Tls(s) => Box::new(s),
        })
    };
    match tokio::time::timeout(within, opening).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(why)) => Err(RuleError::Connect(to, why)),
        Err(_) => Err(RuleError::Connect(
            to,
            format!("no answer within {within:?}"),
        )),
    }
}

/// Reads into `read` until `e` is decided.
async fn until_decided(
    conn: &mut Box<dyn Stream>,
    e: &Expect,
    read: &mut Vec<u8>,
    last: &mut bool,
    n: usize,
) -> Result<(), RuleError> {
    // haproxy reads at least once after a send or connect before judging.
    let mut must_read = read.is_empty() && !*last;
    loop {
        if must_read && !*last {
            let mut chunk = vec![0; BUFFER.saturating_sub(read.len()).max(1)];
            let got = conn.read(&mut chunk).await.map_err(RuleError::Receive)?;
            read.extend_from_slice(&chunk[..got]);
            *last = got == 0;
        }
        must_read = true;
        match judge(e, read, *last) {
            Judgement::Pass => return Ok(()),
            Judgement::Fail => {
                let shown = String::from_utf8_lossy(&read[..read.len().min(64)]).into_owned();
                return Err(RuleError::Unexpected(n, shown));
            }
            Judgement::Wait => {}
        }
    }
}

/// An `http-check expect` ready to run (None in [`HttpJudge::new`]: haproxy's default, a
/// status of 2xx or 3xx).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpJudge {
    negate: bool,
    what: HttpWhat,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HttpWhat {
    Status(Vec<(u16, u16)>),
    Rstatus(Regex),
    Body(Vec<u8>),
    Rbody(Regex),
}

impl HttpJudge {
    /// The judge of `expect`, or of haproxy's default without one.
    pub fn new(expect: Option<&HttpExpect>) -> HttpJudge {
        let Some(e) = expect else {
            return HttpJudge {
                negate: false,
                what: HttpWhat::Status(vec![(200, 399)]),
            };
        };
        let what = match &e.what {
            HttpMatch::Status(r) => HttpWhat::Status(r.clone()),
            HttpMatch::Rstatus(r) => HttpWhat::Rstatus(Regex::new(r)),
            HttpMatch::String(s) => HttpWhat::Body(s.as_bytes().to_vec()),
            HttpMatch::Rstring(r) => HttpWhat::Rbody(Regex::new(r)),
        };
        HttpJudge {
            negate: e.negate,
            what,
        }
    }

    /// Whether the check needs the body.
    pub fn needs_body(&self) -> bool {
        matches!(self.what, HttpWhat::Body(_) | HttpWhat::Rbody(_))
    }

    /// Whether `answer` passes.
    pub fn passes(&self, answer: &Answer) -> bool {
        let found = match &self.what {
            HttpWhat::Status(ranges) => {
                (ranges.iter()).any(|(lo, hi)| (*lo..=*hi).contains(&answer.status))
            }
            HttpWhat::Rstatus(r) => r.matches(answer.status.to_string().as_bytes()),
            HttpWhat::Body(b) => answer
                .body
                .windows(b.len().max(1))
                .any(|w| w == b.as_slice()),
            HttpWhat::Rbody(r) => r.matches(&answer.body),
        };
        found != self.negate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(negate: bool, min_recv: Option<usize>, pattern: Pattern) -> Expect {
        expect(&TcpExpect {
            negate,
            min_recv,
            pattern,
        })
    }

    #[test]
    fn expect_waits_passes_or_fails_as_haproxy() {
        let pong = e(false, None, Pattern::String(b"+PONG".to_vec()));
        assert_eq!(
            judge(&pong, b"+PO", false),
            Judgement::Wait,
            "too short yet"
        );
        assert_eq!(
            judge(&pong, b"-ERR x", false),
            Judgement::Wait,
            "a miss waits"
        );
        assert_eq!(
            judge(&pong, b"-ERR x", true),
            Judgement::Fail,
            "until the end"
        );
        assert_eq!(judge(&pong, b"x+PONG\r\n", false), Judgement::Pass);
        let not_err = e(true, None, Pattern::Rstring("^-ERR".into()));
        assert_eq!(judge(&not_err, b"+OK", false), Judgement::Wait);
        assert_eq!(judge(&not_err, b"+OK", true), Judgement::Pass);
        assert_eq!(judge(&not_err, b"-ERR", false), Judgement::Fail);
        let hello = e(false, Some(5), Pattern::Rbinary("^1[56]".into()));
        assert_eq!(judge(&hello, &[0x16, 3], false), Judgement::Wait);
        assert_eq!(judge(&hello, &[0x15, 3, 0, 0, 2], false), Judgement::Pass);
        assert_eq!(
            judge(&hello, b"HTTP/", false),
            Judgement::Fail,
            "min-recv decides"
        );
        let bin = e(false, None, Pattern::Binary(vec![0, 1]));
        assert_eq!(judge(&bin, &[9, 0, 1], false), Judgement::Pass);
        let full = vec![b'x'; BUFFER];
        assert_eq!(
            judge(&pong, &full, false),
            Judgement::Fail,
            "a full buffer is the end"
        );
    }

    #[test]
    fn a_connect_is_added_when_the_rules_do_not_start_with_one() {
        let s = steps(&[TcpRule::Send(b"x".to_vec())], true);
        assert_eq!(
            s[0],
            Step::Connect {
                port: None,
                ssl: true
            }
        );
        let s = steps(
            &[TcpRule::Connect {
                port: Some(1),
                ssl: false,
            }],
            true,
        );
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn http_expectations() {
        let answer = |status, body: &str| Answer {
            status,
            location: None,
            body: body.as_bytes().to_vec(),
        };
        let default = HttpJudge::new(None);
        assert!(default.passes(&answer(302, "")) && !default.passes(&answer(404, "")));
        let ok = HttpExpect {
            negate: false,
            what: HttpMatch::Status(vec![(200, 200)]),
        };
        assert!(!HttpJudge::new(Some(&ok)).passes(&answer(204, "")));
        let body = HttpExpect {
            negate: true,
            what: HttpMatch::String("unhealthy".into()),
        };
        let j = HttpJudge::new(Some(&body));
        assert!(j.needs_body());
        assert!(j.passes(&answer(500, "ok")), "only the body counts");
        assert!(!j.passes(&answer(200, "is unhealthy")));
        let rstatus = HttpExpect {
            negate: false,
            what: HttpMatch::Rstatus("^2".into()),
        };
        assert!(HttpJudge::new(Some(&rstatus)).passes(&answer(204, "")));
    }
}
