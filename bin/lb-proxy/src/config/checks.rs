//! The health-check rules of haproxy 2.6 lb-proxy reads: `tcp-check connect|send|send-binary|
//! expect`, `http-check connect|send|expect`, and the two rules `option ssl-hello-chk` stands
//! for. Each function reads the words after the keyword and says what is wrong, if anything.

use ipi_core::place::{Errors, Location};

use super::model::{HttpCheck, HttpExpect, HttpMatch, Kind, Pattern, Proxy, TcpExpect, TcpRule};

/// What is wrong with a check rule. Each message names the keywords as they were written, and
/// for a word lb-proxy does not read there, what it reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// `option httpchk` with more than a method, a URI and a version.
    #[error("`option httpchk` takes a method, a URI and a version")]
    HttpchkArguments,
    /// A keyword without what must follow it.
    #[error("`{what}` needs {needs}")]
    Needs {
        /// The keywords.
        what: String,
        /// What must follow.
        needs: &'static str,
    },
    /// A value that is not of the kind the keyword takes.
    #[error("`{what}` takes {takes}")]
    Takes {
        /// The keywords.
        what: String,
        /// What it takes.
        takes: &'static str,
    },
    /// A word lb-proxy does not read where it stands.
    #[error("`{what} {word}`: lb-proxy reads {reads}")]
    Unknown {
        /// The keywords before it.
        what: String,
        /// The word.
        word: String,
        /// What lb-proxy reads there.
        reads: &'static str,
    },
    /// A word after a complete rule.
    #[error("`{what}`: unexpected `{word}`")]
    Unexpected {
        /// The rule.
        what: String,
        /// The word after it.
        word: String,
    },
    /// A second `http-check expect` in one section.
    #[error("lb-proxy reads one `http-check expect` per backend")]
    SecondExpect,
    /// Not a list of status codes and ranges.
    #[error("`status {0}`: codes (200) or ranges (200-399), separated by commas")]
    Statuses(String),
    /// Not a regular expression.
    #[error("`{text}` is not a regular expression: {why}")]
    NotRegex {
        /// The text.
        text: String,
        /// The regex crate's reason.
        why: String,
    },
    /// Not hex digit pairs.
    #[error("`{0}` is not a string of hex digit pairs")]
    NotHex(String),
}

fn needs(what: impl Into<String>, needs: &'static str) -> CheckError {
    CheckError::Needs {
        what: what.into(),
        needs,
    }
}

fn takes(what: impl Into<String>, takes: &'static str) -> CheckError {
    CheckError::Takes {
        what: what.into(),
        takes,
    }
}

fn unknown(what: impl Into<String>, word: &str, reads: &'static str) -> CheckError {
    CheckError::Unknown {
        what: what.into(),
        word: word.to_owned(),
        reads,
    }
}

/// Which `option` chooses the check (haproxy: the last one written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Chosen {
    #[default]
    Connect,
    Http,
    Tcp,
    SslHello,
}

/// A section's check settings while it is read: the option chosen and the rules of each
/// kind, which haproxy keeps apart and uses only under their option.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    chosen: Chosen,
    http: Option<HttpCheck>,
    tcp: Vec<TcpRule>,
    /// Where rules of each kind were first written, for the warning when they go unused.
    tcp_at: Option<Location>,
    http_at: Option<Location>,
    /// Whether the section wrote rules of its own (which replace those of `defaults`).
    own_tcp: bool,
    own_http: bool,
}

impl Rules {
    /// Rules inherited from `defaults`: the section's own replace them.
    pub fn inherited(&self) -> Rules {
        Rules {
            own_tcp: false,
            own_http: false,
            ..self.clone()
        }
    }

    /// `option httpchk [METHOD [URI [VERSION]]]`.
    pub fn option_httpchk(&mut self, args: &[String]) -> Result<(), CheckError> {
        if args.len() > 3 {
            return Err(CheckError::HttpchkArguments);
        }
        let arg = |i: usize, default: &str| args.get(i).map_or(default, String::as_str).to_string();
        let check = self
            .http
            .get_or_insert_with(|| HttpCheck::new("OPTIONS", "/", "HTTP/1.0"));
        check.method = arg(0, "OPTIONS");
        check.uri = arg(1, "/");
        check.version = arg(2, "HTTP/1.0");
        self.chosen = Chosen::Http;
        Ok(())
    }

    /// `option tcp-check`.
    pub fn option_tcp_check(&mut self) {
        self.chosen = Chosen::Tcp;
    }

    /// `option ssl-hello-chk`.
    pub fn option_ssl_hello(&mut self) {
        self.chosen = Chosen::SslHello;
    }

    /// A `tcp-check` line (the words after the keyword).
    pub fn tcp_line(&mut self, w: &[String], at: &Location) -> Result<(), CheckError> {
        let rule = tcp_rule(w)?;
        if !self.own_tcp {
            self.tcp.clear();
            self.own_tcp = true;
        }
        self.tcp_at.get_or_insert_with(|| at.clone());
        self.tcp.push(rule);
        Ok(())
    }

    /// An `http-check` line (the words after the keyword).
    pub fn http_line(&mut self, w: &[String], at: &Location) -> Result<(), CheckError> {
        let mut check = match (&self.http, self.own_http) {
            (Some(h), true) => h.clone(),
            (Some(h), false) => HttpCheck::new(&h.method, &h.uri, &h.version),
            (None, _) => HttpCheck::new("OPTIONS", "/", "HTTP/1.0"),
        };
        http_rule(w, &mut check)?;
        self.own_http = true;
        self.http_at.get_or_insert_with(|| at.clone());
        self.http = Some(check);
        Ok(())
    }

    /// Sets `p`'s check from the rules; rules that go unused get haproxy's warning.
    pub fn finish(&self, p: &mut Proxy, warnings: &mut Errors) {
        p.httpchk = (self.chosen == Chosen::Http)
            .then(|| self.http.clone())
            .flatten();
        p.tcp_check = match self.chosen {
            Chosen::Tcp => Some(self.tcp.clone()),
            Chosen::SslHello => Some(ssl_hello()),
            Chosen::Connect | Chosen::Http => None,
        };
        if p.kind == Kind::Frontend {
            return;
        }
        let kind = if p.kind == Kind::Backend {
            "backend"
        } else {
            "proxy"
        };
        if let (Some(at), false) = (&self.tcp_at, self.chosen == Chosen::Tcp) {
            if self.own_tcp && self.chosen == Chosen::Connect {
                warnings.push(at, format!("{kind} '{}' uses tcp-check rules without 'option tcp-check', so the rules are ignored.", p.name));
            }
        }
        if let (Some(at), Chosen::Connect) = (&self.http_at, self.chosen) {
            if self.own_http {
                warnings.push(at, format!("{kind} '{}' uses http-check rules without 'option httpchk', so the rules are ignored.", p.name));
            }
        }
    }
}

/// Options of `expect` that name a status or a message for haproxy's logs and stats: read,
/// without effect on the verdict (lb-proxy reports its own reasons).
const EXPECT_LABELS: &[&str] = &[
    "comment",
    "ok-status",
    "error-status",
    "tout-status",
    "on-success",
    "on-error",
];

/// `tcp-check RULE...` after `tcp-check`.
pub fn tcp_rule(w: &[String]) -> Result<TcpRule, CheckError> {
    let (action, rest) = w.split_first().ok_or(needs("tcp-check", "a rule"))?;
    match action.as_str() {
        "connect" => {
            let (port, ssl) = connect(rest, "tcp-check")?;
            Ok(TcpRule::Connect { port, ssl })
        }
        "send" | "send-binary" => {
            let (data, rest) = rest
                .split_first()
                .ok_or_else(|| needs(format!("tcp-check {action}"), "data"))?;
            labels_only(rest, &format!("tcp-check {action}"))?;
            if action == "send" {
                Ok(TcpRule::Send(super::lexer::bytes(data)))
            } else {
                Ok(TcpRule::Send(hex(data)?))
            }
        }
        "expect" => tcp_expect(rest).map(TcpRule::Expect),
        other => Err(unknown(
            "tcp-check",
            other,
            "tcp-check connect, send, send-binary and expect",
        )),
    }
}

/// The options after `connect`: `port N`, `ssl`, `linger`, `default`, `comment TEXT`.
fn connect(w: &[String], what: &str) -> Result<(Option<u16>, bool), CheckError> {
    let (mut port, mut ssl) = (None, false);
    let mut it = w.iter();
    while let Some(opt) = it.next() {
        match opt.as_str() {
            "ssl" => ssl = true,
            // `linger` closes with a reset, `default` takes the server's settings: neither
            // changes what a check finds.
            "linger" | "default" => {}
            "port" => {
                let n = it.next().and_then(|p| p.parse::<u16>().ok());
                port = Some(n.filter(|n| *n > 0).ok_or_else(|| {
                    takes(format!("{what} connect port"), "a port number (1-65535)")
                })?);
            }
            "comment" => {
                it.next();
            }
            other => {
                return Err(unknown(
                    format!("{what} connect"),
                    other,
                    "port N, ssl, linger, default and comment",
                ))
            }
        }
    }
    Ok((port, ssl))
}

/// Only `comment TEXT` may follow.
fn labels_only(rest: &[String], what: &str) -> Result<(), CheckError> {
    match rest {
        [] => Ok(()),
        [c, _] if c == "comment" => Ok(()),
        [other, ..] => Err(CheckError::Unexpected {
            what: what.to_owned(),
            word: other.clone(),
        }),
    }
}

/// `expect [options] [!] MATCH PATTERN` after `expect`: `!`, `min-recv`, the match and the
/// pattern.
fn expect_head<'a>(
    w: &'a [String],
    what: &str,
) -> Result<(bool, Option<usize>, &'a str, &'a String), CheckError> {
    let (mut negate, mut min_recv) = (false, None);
    let mut i = 0;
    while i < w.len() {
        match w[i].as_str() {
            "!" => negate = true,
            "min-recv" => {
                let n = w.get(i + 1).and_then(|n| n.parse::<i64>().ok());
                min_recv = match n {
                    Some(-1) => None,
                    Some(n) if n >= 0 => usize::try_from(n).ok(),
                    _ => return Err(takes(format!("{what} expect min-recv"), "a number")),
                };
                i += 1;
            }
            l if EXPECT_LABELS.contains(&l) => i += 1,
            _ => break,
        }
        i += 1;
    }
    match &w[i.min(w.len())..] {
        [kind, value] => Ok((negate, min_recv, kind.as_str(), value)),
        [kind, value, t, ..] => Err(CheckError::Unexpected {
            what: format!("{what} expect {kind} {value}"),
            word: t.clone(),
        }),
        _ => Err(needs(format!("{what} expect"), "a match and a pattern")),
    }
}

fn tcp_expect(w: &[String]) -> Result<TcpExpect, CheckError> {
    let (negate, min_recv, kind, value) = expect_head(w, "tcp-check")?;
    let pattern = match kind {
        "string" => Pattern::String(super::lexer::bytes(value)),
        "binary" => Pattern::Binary(hex(value)?),
        "rstring" => Pattern::Rstring(regex(value)?),
        "rbinary" => Pattern::Rbinary(regex(value)?),
        other => {
            return Err(unknown(
                "tcp-check expect",
                other,
                "string, rstring, binary and rbinary",
            ))
        }
    };
    Ok(TcpExpect {
        negate,
        min_recv,
        pattern,
    })
}

/// `http-check RULE...` after `http-check`, applied to `check`.
pub fn http_rule(w: &[String], check: &mut HttpCheck) -> Result<(), CheckError> {
    let (action, rest) = w.split_first().ok_or(needs("http-check", "a rule"))?;
    match action.as_str() {
        "connect" => {
            let (port, ssl) = connect(rest, "http-check")?;
            check.port = port.or(check.port);
            check.ssl |= ssl;
            Ok(())
        }
        "send" => http_send(rest, check),
        "expect" => {
            if check.expect.is_some() {
                return Err(CheckError::SecondExpect);
            }
            check.expect = Some(http_expect(rest)?);
            Ok(())
        }
        other => Err(unknown(
            "http-check",
            other,
            "http-check connect, send and expect",
        )),
    }
}

fn http_send(w: &[String], check: &mut HttpCheck) -> Result<(), CheckError> {
    let mut it = w.iter();
    while let Some(opt) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| needs(format!("http-check send {opt}"), "a value"))
        };
        match opt.as_str() {
            "meth" => check.method = value()?,
            "uri" => check.uri = value()?,
            "ver" => check.version = value()?,
            "hdr" => {
                let name = value()?;
                let v = value()?;
                check.headers.push((name, v));
            }
            "comment" => {
                value()?;
            }
            other => {
                return Err(unknown(
                    "http-check send",
                    other,
                    "meth, uri, ver, hdr and comment",
                ))
            }
        }
    }
    Ok(())
}

fn http_expect(w: &[String]) -> Result<HttpExpect, CheckError> {
    let (negate, _, kind, value) = expect_head(w, "http-check")?;
    let what = match kind {
        "status" => HttpMatch::Status(statuses(value)?),
        "rstatus" => HttpMatch::Rstatus(regex(value)?),
        "string" => HttpMatch::String(value.clone()),
        "rstring" => HttpMatch::Rstring(regex(value)?),
        other => {
            return Err(unknown(
                "http-check expect",
                other,
                "status, rstatus, string and rstring",
            ))
        }
    };
    Ok(HttpExpect { negate, what })
}

/// `200`, `200-399`, `200,404`: haproxy's list of codes and ranges.
fn statuses(text: &str) -> Result<Vec<(u16, u16)>, CheckError> {
    let bad = || CheckError::Statuses(text.to_owned());
    text.split(',')
        .map(|part| {
            let (lo, hi) = part.split_once('-').unwrap_or((part, part));
            let lo: u16 = lo.trim().parse().map_err(|_| bad())?;
            let hi: u16 = hi.trim().parse().map_err(|_| bad())?;
            if lo > hi {
                return Err(bad());
            }
            Ok((lo, hi))
        })
        .collect()
}

/// A regular expression checked now, kept as written.
fn regex(text: &str) -> Result<String, CheckError> {
    regex::bytes::Regex::new(text)
        .map(|_| text.to_string())
        .map_err(|e| CheckError::NotRegex {
            text: text.to_owned(),
            why: e.to_string(),
        })
}

/// `send-binary` and `expect binary` hex strings.
fn hex(text: &str) -> Result<Vec<u8>, CheckError> {
    let not_hex = || CheckError::NotHex(text.to_owned());
    if text.len() % 2 != 0 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(not_hex());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|_| not_hex()))
        .collect()
}

/// What `option ssl-hello-chk` runs (haproxy's `do_parse_ssl_hello_chk_opt`): an SSLv3
/// ClientHello, and at least 5 bytes back of which the first is 0x15 (an alert) or 0x16 (a
/// handshake): the server speaks SSL/TLS, whatever it thinks of the hello.
pub fn ssl_hello() -> Vec<TcpRule> {
    vec![
        TcpRule::Send(client_hello()),
        TcpRule::Expect(TcpExpect {
            negate: false,
            min_recv: Some(5),
            pattern: Pattern::Rbinary("^1[56]".to_string()),
        }),
    ]
}

/// An SSLv3 ClientHello (RFC 6101 5.6.1.2; record layer 5.2.1) offering the 39 ciphers
/// haproxy offers, 0x0001-0x001B and 0x002F-0x003A, without compression or session.
fn client_hello() -> Vec<u8> {
    let ciphers: Vec<u16> = (0x0001..=0x001B).chain(0x002F..=0x003A).collect();
    let mut hello = vec![0x03, 0x00]; // client_version SSLv3
                                      // Random: 4 bytes of time, 28 of nonce; the server needs nothing from them.
    hello.extend_from_slice(&[0; 4]);
    hello.extend_from_slice(b"LB-PROXY-SSL-CHECK\nLB-PROXY\n");
    hello.push(0); // no session id
    hello.extend_from_slice(&u16::try_from(ciphers.len() * 2).unwrap_or(0).to_be_bytes());
    for c in ciphers {
        hello.extend_from_slice(&c.to_be_bytes());
    }
    hello.extend_from_slice(&[1, 0]); // one compression method: null
    let len = hello.len();
    let mut handshake = vec![0x01]; // client_hello
    handshake.extend_from_slice(&u32::try_from(len).unwrap_or(0).to_be_bytes()[1..]);
    handshake.extend_from_slice(&hello);
    let mut record = vec![0x16, 0x03, 0x00]; // handshake, SSLv3
    record.extend_from_slice(&u16::try_from(handshake.len()).unwrap_or(0).to_be_bytes());
    record.extend_from_slice(&handshake);
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> Vec<String> {
        super::super::lexer::words(text).unwrap()
    }

    #[test]
    fn tcp_check_rules() {
        assert_eq!(
            tcp_rule(&w("connect port 6443 ssl")).unwrap(),
            TcpRule::Connect {
                port: Some(6443),
                ssl: true
            }
        );
        assert_eq!(
            tcp_rule(&w(r"send PING\r\n")).unwrap(),
            TcpRule::Send(b"PING\r\n".to_vec())
        );
        assert_eq!(
            tcp_rule(&w("send-binary 0a0B")).unwrap(),
            TcpRule::Send(vec![10, 11])
        );
        let TcpRule::Expect(e) = tcp_rule(&w("expect min-recv 3 ! rstring ^-ERR")).unwrap() else {
            panic!("an expect rule")
        };
        assert!(e.negate);
        assert_eq!(e.min_recv, Some(3));
        assert_eq!(e.pattern, Pattern::Rstring("^-ERR".into()));
        for (bad, why) in [
            ("send-binary 0a0", "hex digit pairs"),
            ("expect rstring (", "not a regular expression"),
            ("expect string", "needs a match and a pattern"),
            ("expect string-lf x", "lb-proxy reads string, rstring"),
            ("connect port 0", "port number"),
            (
                "set-var(check.x) int(1)",
                "lb-proxy reads tcp-check connect",
            ),
        ] {
            let e = tcp_rule(&w(bad)).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn errors_say_which_keyword_and_what_lb_proxy_reads_there() {
        assert_eq!(
            tcp_rule(&w("expect string-lf x")).unwrap_err(),
            CheckError::Unknown {
                what: "tcp-check expect".into(),
                word: "string-lf".into(),
                reads: "string, rstring, binary and rbinary",
            }
        );
        assert_eq!(
            tcp_rule(&w("expect string-lf x")).unwrap_err().to_string(),
            "`tcp-check expect string-lf`: lb-proxy reads string, rstring, binary and rbinary"
        );
        assert_eq!(
            tcp_rule(&w("send x y")).unwrap_err(),
            CheckError::Unexpected {
                what: "tcp-check send".into(),
                word: "y".into(),
            }
        );
        let mut c = HttpCheck::new("OPTIONS", "/", "HTTP/1.0");
        http_rule(&w("expect status 200"), &mut c).unwrap();
        assert_eq!(
            http_rule(&w("expect status 200"), &mut c),
            Err(CheckError::SecondExpect)
        );
        assert_eq!(
            http_rule(&w("send meth"), &mut c).unwrap_err().to_string(),
            "`http-check send meth` needs a value"
        );
    }

    #[test]
    fn http_check_rules() {
        let mut c = HttpCheck::new("OPTIONS", "/", "HTTP/1.0");
        http_rule(&w("connect ssl"), &mut c).unwrap();
        http_rule(
            &w("send meth GET uri /healthz ver HTTP/1.1 hdr Host api"),
            &mut c,
        )
        .unwrap();
        http_rule(&w("expect ! status 500-599,404"), &mut c).unwrap();
        assert!(c.ssl);
        assert_eq!((c.method.as_str(), c.uri.as_str()), ("GET", "/healthz"));
        assert_eq!(c.headers, [("Host".to_string(), "api".to_string())]);
        assert_eq!(
            c.expect,
            Some(HttpExpect {
                negate: true,
                what: HttpMatch::Status(vec![(500, 599), (404, 404)])
            })
        );
        assert!(http_rule(&w("expect status 200"), &mut c).is_err());
        let mut c = HttpCheck::new("OPTIONS", "/", "HTTP/1.0");
        for bad in ["expect status 2xx", "send body x", "disable-on-404"] {
            assert!(http_rule(&w(bad), &mut c).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_ssl_hello_is_a_well_formed_sslv3_client_hello() {
        let TcpRule::Send(r) = &ssl_hello()[0] else {
            panic!("a send rule first")
        };
        // As haproxy's: 5-byte record header, 0x79 bytes of handshake, 0x75 of hello.
        assert_eq!(&r[..5], [0x16, 0x03, 0x00, 0x00, 0x79]);
        assert_eq!(&r[5..9], [0x01, 0x00, 0x00, 0x75]);
        assert_eq!(r.len(), 5 + 0x79);
        assert_eq!(&r[r.len() - 2..], [1, 0]);
    }
}
