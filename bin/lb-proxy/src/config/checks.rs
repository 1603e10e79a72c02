//! The health-check rules of haproxy 2.6 lb-proxy reads: `tcp-check connect|send|send-binary|
//! expect`, `http-check connect|send|expect`, and the two rules `option ssl-hello-chk` stands
//! for. Each function reads the words after the keyword and says what is wrong, if anything.

use ipi_core::place::{Errors, Location};

use super::model::{HttpCheck, HttpExpect, HttpMatch, Kind, Pattern, Proxy, TcpExpect, TcpRule};

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
    pub fn option_httpchk(&mut self, args: &[String]) -> Result<(), String> {
        if args.len() > 3 {
            return Err("`option httpchk` takes a method, a URI and a version".to_string());
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
    pub fn tcp_line(&mut self, w: &[String], at: &Location) -> Result<(), String> {
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
    pub fn http_line(&mut self, w: &[String], at: &Location) -> Result<(), String> {
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
pub fn tcp_rule(w: &[String]) -> Result<TcpRule, String> {
    let (action, rest) = w.split_first().ok_or("`tcp-check` needs a rule")?;
    match action.as_str() {
        "connect" => {
            let (port, ssl) = connect(rest, "tcp-check")?;
            Ok(TcpRule::Connect { port, ssl })
        }
        "send" | "send-binary" => {
            let (data, rest) = rest
                .split_first()
                .ok_or_else(|| format!("`tcp-check {action}` needs data"))?;
            labels_only(rest, &format!("tcp-check {action}"))?;
            if action == "send" {
                Ok(TcpRule::Send(super::lexer::bytes(data)))
            } else {
                Ok(TcpRule::Send(hex(data)?))
            }
        }
        "expect" => tcp_expect(rest).map(TcpRule::Expect),
        other => Err(format!(
            "`tcp-check {other}`: lb-proxy reads tcp-check connect, send, send-binary and expect"
        )),
    }
}

/// The options after `connect`: `port N`, `ssl`, `linger`, `default`, `comment TEXT`.
fn connect(w: &[String], what: &str) -> Result<(Option<u16>, bool), String> {
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
                port = Some(n.filter(|n| *n > 0).ok_or(format!(
                    "`{what} connect port` takes a port number (1-65535)"
                ))?);
            }
            "comment" => {
                it.next();
            }
            other => {
                return Err(format!(
                "`{what} connect {other}`: lb-proxy reads port N, ssl, linger, default and comment"
            ))
            }
        }
    }
    Ok((port, ssl))
}

/// Only `comment TEXT` may follow.
fn labels_only(rest: &[String], what: &str) -> Result<(), String> {
    match rest {
        [] => Ok(()),
        [c, _] if c == "comment" => Ok(()),
        [other, ..] => Err(format!("`{what}`: unexpected `{other}`")),
    }
}

/// `expect [options] [!] MATCH PATTERN` after `expect`: `!`, `min-recv`, the match and the
/// pattern.
fn expect_head<'a>(
    w: &'a [String],
    what: &str,
) -> Result<(bool, Option<usize>, &'a str, &'a String), String> {
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
                    _ => return Err(format!("`{what} expect min-recv` takes a number")),
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
        [kind, value, t, ..] => Err(format!("`{what} expect {kind} {value}`: unexpected `{t}`")),
        _ => Err(format!("`{what} expect` needs a match and a pattern")),
    }
}

fn tcp_expect(w: &[String]) -> Result<TcpExpect, String> {
    let (negate, min_recv, kind, value) = expect_head(w, "tcp-check")?;
    let pattern = match kind {
        "string" => Pattern::String(super::lexer::bytes(value)),
        "binary" => Pattern::Binary(hex(value)?),
        "rstring" => Pattern::Rstring(regex(value)?),
        "rbinary" => Pattern::Rbinary(regex(value)?),
        other => {
            return Err(format!(
                "`tcp-check expect {other}`: lb-proxy reads string, rstring, binary and rbinary"
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
pub fn http_rule(w: &[String], check: &mut HttpCheck) -> Result<(), String> {
    let (action, rest) = w.split_first().ok_or("`http-check` needs a rule")?;
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
                return Err("lb-proxy reads one `http-check expect` per backend".to_string());
            }
            check.expect = Some(http_expect(rest)?);
            Ok(())
        }
        other => Err(format!(
            "`http-check {other}`: lb-proxy reads http-check connect, send and expect"
        )),
    }
}

fn http_send(w: &[String], check: &mut HttpCheck) -> Result<(), String> {
    let mut it = w.iter();
    while let Some(opt) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("`http-check send {opt}` needs a value"))
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
                return Err(format!(
                    "`http-check send {other}`: lb-proxy reads meth, uri, ver, hdr and comment"
                ))
            }
        }
    }
    Ok(())
}

fn http_expect(w: &[String]) -> Result<HttpExpect, String> {
    let (negate, _, kind, value) = expect_head(w, "http-check")?;
    let what = match kind {
        "status" => HttpMatch::Status(statuses(value)?),
        "rstatus" => HttpMatch::Rstatus(regex(value)?),
        "string" => HttpMatch::String(value.clone()),
        "rstring" => HttpMatch::Rstring(regex(value)?),
        other => {
            return Err(format!(
                "`http-check expect {other}`: lb-proxy reads status, rstatus, string and rstring"
            ))
        }
    };
    Ok(HttpExpect { negate, what })
}

/// `200`, `200-399`, `200,404`: haproxy's list of codes and ranges.
fn statuses(text: &str) -> Result<Vec<(u16, u16)>, String> {
    let bad = || format!("`status {text}`: codes (200) or ranges (200-399), separated by commas");
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
fn regex(text: &str) -> Result<String, String> {
    regex::bytes::Regex::new(text)
        .map(|_| text.to_string())
        .map_err(|e| format!("`{text}` is not a regular expression: {e}"))
}

/// `send-binary` and `expect binary` hex strings.
fn hex(text: &str) -> Result<Vec<u8>, String> {
    if text.len() % 2 != 0 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("`{text}` is not a string of hex digit pairs"));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|e| e.to_string()))
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
            let e = tcp_rule(&w(bad)).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
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
