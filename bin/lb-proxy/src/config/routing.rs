//! Routing TLS connections by their server name in `mode tcp`, as the OKD and OpenShift UPI
//! guides do for the API and ingress on one address: `tcp-request inspect-delay`,
//! `tcp-request content accept|reject [if|unless COND]`, `acl NAME FETCH [-i] [-m METHOD]
//! PATTERN...` and `use_backend NAME if|unless COND`, with the fetches `req_ssl_sni` and
//! `req_ssl_hello_type` (or `req.ssl_sni`, `req.ssl_hello_type`). Conditions are haproxy's:
//! terms ANDed, `||` or `or` between alternatives, `!` negating a term, a term a named ACL or
//! `{ FETCH ... }`. Other fetches (HTTP routing) are refused by the caller, naming the line.
//!
//! The rules are read here and judged here without IO ([`Condition::judge`]): bytes the
//! client sent in, yes, no, or not yet.

use std::time::Duration;

use ipi_core::place::Location;

use crate::hello::{self, Read};

/// A frontend's routing: what it waits for and where it sends a connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routing {
    /// `tcp-request inspect-delay`: how long the content rules may wait for the client.
    pub inspect_delay: Option<Duration>,
    /// `acl` lines, by name (an ACL written twice matches if either line does).
    pub acls: Vec<(String, Test)>,
    /// `tcp-request content` rules, in order.
    pub content: Vec<ContentRule>,
    /// `use_backend` rules, in order: the first that matches picks the backend.
    pub routes: Vec<Route>,
}

/// A `use_backend` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The backend.
    pub backend: String,
    /// Its condition (none: always).
    pub when: Option<Condition>,
    /// Its line.
    pub location: Location,
}

impl Routing {
    /// Nothing to route by: the default backend takes every connection at once.
    pub fn is_empty(&self) -> bool {
        self.content.is_empty() && self.routes.is_empty()
    }
}

/// What a sample is taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    /// `req_ssl_sni`: the server name of the client's ClientHello.
    Sni,
    /// `req_ssl_hello_type`: the handshake type of the client's first record.
    HelloType,
}

/// How a server name is compared with the patterns (`-m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `str` (the default): the whole name.
    Exact,
    /// `beg`: a prefix.
    Beginning,
    /// `end`: a suffix.
    End,
    /// `sub`: anywhere.
    Substring,
}

/// One ACL: a fetch and the patterns it is matched against (any one matching).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Test {
    /// The fetch.
    pub fetch: Fetch,
    /// `-i`: names compared without case.
    pub nocase: bool,
    /// `-m`.
    pub method: Method,
    /// The patterns.
    pub patterns: Vec<String>,
}

/// One term of a condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// `!`.
    pub negate: bool,
    /// A named ACL (`Err`), or one written in braces.
    pub test: Result<Test, String>,
}

/// `if COND` (or `unless COND`): alternatives (`||`) of terms that must all match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// `unless`.
    pub unless: bool,
    /// The alternatives.
    pub any: Vec<Vec<Term>>,
}

/// A `tcp-request content` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentRule {
    /// `accept` (else `reject`).
    pub accept: bool,
    /// Its condition (none: always).
    pub when: Option<Condition>,
    /// Its line.
    pub location: Location,
}

/// A judgement on what has arrived so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It matches.
    Yes,
    /// It does not.
    No,
    /// More bytes may change it.
    NotYet,
}

impl Verdict {
    fn not(self) -> Verdict {
        match self {
            Verdict::Yes => Verdict::No,
            Verdict::No => Verdict::Yes,
            Verdict::NotYet => Verdict::NotYet,
        }
    }
}

/// Whether `fetch` names a fetch this module reads.
fn fetch(name: &str) -> Option<Fetch> {
    match name {
        "req_ssl_sni" | "req.ssl_sni" => Some(Fetch::Sni),
        "req_ssl_hello_type" | "req.ssl_hello_type" => Some(Fetch::HelloType),
        _ => None,
    }
}

/// Whether `words` (an `acl` line's after its name, or a braced term) use a fetch routing
/// reads: the caller refuses the rest as HTTP routing.
pub fn is_tls_fetch(word: &str) -> bool {
    fetch(word).is_some()
}

/// `FETCH [-i] [-m METHOD] PATTERN...`.
pub fn test(words: &[&str]) -> Result<Test, String> {
    let (&first, mut rest) = words.split_first().ok_or("an ACL needs a fetch")?;
    let fetch = fetch(first).ok_or_else(|| {
        format!("`{first}`: lb-proxy routes by req_ssl_sni and req_ssl_hello_type only")
    })?;
    let mut t = Test {
        fetch,
        nocase: false,
        method: Method::Exact,
        patterns: Vec::new(),
    };
    while let Some((&flag, more)) = rest.split_first() {
        match flag {
            "-i" => t.nocase = true,
            "-m" => {
                let (&m, after) = more.split_first().ok_or("`-m` needs a method")?;
                t.method = match m {
                    "str" => Method::Exact,
                    "beg" => Method::Beginning,
                    "end" => Method::End,
                    "sub" => Method::Substring,
                    other => {
                        return Err(format!(
                            "`-m {other}`: lb-proxy matches str, beg, end or sub"
                        ))
                    }
                };
                rest = after;
                continue;
            }
            "--" => {
                rest = more;
                break;
            }
            _ => break,
        }
        rest = more;
    }
    if rest.is_empty() {
        return Err(format!("`{first}` needs a pattern"));
    }
    if fetch == Fetch::HelloType && rest.iter().any(|p| p.parse::<u8>().is_err()) {
        return Err(format!("`{first}` matches numbers (1: ClientHello)"));
    }
    t.patterns = rest.iter().map(|p| (*p).to_string()).collect();
    Ok(t)
}

/// `if|unless TERM...` (the words after the action or backend).
pub fn condition(words: &[&str]) -> Result<Condition, String> {
    let unless = match words.first() {
        Some(&"if") => false,
        Some(&"unless") => true,
        _ => return Err("a condition starts with `if` or `unless`".into()),
    };
    let mut any = vec![Vec::new()];
    let mut rest = &words[1..];
    while let Some((&word, more)) = rest.split_first() {
        rest = more;
        if word == "||" || word == "or" {
            any.push(Vec::new());
            continue;
        }
        let (negate, word) = match word.strip_prefix('!') {
            Some("") => {
                let (&next, after) = rest.split_first().ok_or("`!` needs a term")?;
                rest = after;
                (true, next)
            }
            Some(name) => (true, name),
            None => (false, word),
        };
        let test = if word == "{" {
            let end = rest
                .iter()
                .position(|w| *w == "}")
                .ok_or("`{` without `}`")?;
            let inline = test(&rest[..end])?;
            rest = &rest[end + 1..];
            Ok(inline)
        } else {
            Err(word.to_string())
        };
        if let Some(last) = any.last_mut() {
            last.push(Term { negate, test });
        }
    }
    if any.iter().any(Vec::is_empty) {
        return Err("a condition needs a term on each side of `||`".into());
    }
    Ok(Condition { unless, any })
}

impl Test {
    /// What the client's first bytes say to this test.
    fn judge(&self, data: &[u8]) -> Verdict {
        let sample = match self.fetch {
            Fetch::Sni => match hello::server_name(data) {
                Read::Found(name) => name,
                Read::Absent => return Verdict::No,
                Read::Incomplete => return Verdict::NotYet,
            },
            Fetch::HelloType => match hello::hello_type(data) {
                Read::Found(kind) => kind.to_string(),
                Read::Absent => return Verdict::No,
                Read::Incomplete => return Verdict::NotYet,
            },
        };
        let fold = |s: &str| {
            if self.nocase {
                s.to_ascii_lowercase()
            } else {
                s.to_string()
            }
        };
        let sample = fold(&sample);
        let hit = self
            .patterns
            .iter()
            .map(|p| fold(p))
            .any(|p| match self.method {
                Method::Exact => sample == p,
                Method::Beginning => sample.starts_with(&p),
                Method::End => sample.ends_with(&p),
                Method::Substring => sample.contains(&p),
            });
        if hit {
            Verdict::Yes
        } else {
            Verdict::No
        }
    }
}

impl Condition {
    /// What `data` says to the condition, the named ACLs looked up in `acls` (a name no
    /// `acl` line defines never matches; the configuration checks refuse one).
    pub fn judge(&self, data: &[u8], acls: &[(String, Test)]) -> Verdict {
        let term = |t: &Term| {
            let v = match &t.test {
                Ok(test) => test.judge(data),
                Err(name) => {
                    let named: Vec<Verdict> = (acls.iter())
                        .filter(|(n, _)| n == name)
                        .map(|(_, t)| t.judge(data))
                        .collect();
                    if named.contains(&Verdict::Yes) {
                        Verdict::Yes
                    } else if named.contains(&Verdict::NotYet) {
                        Verdict::NotYet
                    } else {
                        Verdict::No
                    }
                }
            };
            if t.negate {
                v.not()
            } else {
                v
            }
        };
        let mut verdict = Verdict::No;
        for terms in &self.any {
            let all = terms
                .iter()
                .map(term)
                .fold(Verdict::Yes, |acc, v| match (acc, v) {
                    (Verdict::No, _) | (_, Verdict::No) => Verdict::No,
                    (Verdict::NotYet, _) | (_, Verdict::NotYet) => Verdict::NotYet,
                    _ => Verdict::Yes,
                });
            match all {
                Verdict::Yes => {
                    verdict = Verdict::Yes;
                    break;
                }
                Verdict::NotYet => verdict = Verdict::NotYet,
                Verdict::No => {}
            }
        }
        if self.unless {
            verdict.not()
        } else {
            verdict
        }
    }

    /// The named ACLs the condition uses.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.any
            .iter()
            .flatten()
            .filter_map(|t| t.test.as_ref().err().map(String::as_str))
    }
}

/// What the content rules say once `data` has come (`expired`: the inspect delay is over, so
/// what has not come yet never will): accept, reject, or wait for more.
pub fn content(routing: &Routing, data: &[u8], expired: bool) -> Verdict {
    for rule in &routing.content {
        let v = rule
            .when
            .as_ref()
            .map_or(Verdict::Yes, |c| c.judge(data, &routing.acls));
        match v {
            Verdict::Yes if rule.accept => return Verdict::Yes,
            Verdict::Yes => return Verdict::No,
            Verdict::NotYet if !expired => return Verdict::NotYet,
            _ => {}
        }
    }
    Verdict::Yes
}

/// The backend the first matching `use_backend` names for `data`, if one matches.
pub fn route<'a>(routing: &'a Routing, data: &[u8]) -> Option<&'a str> {
    let matches =
        |r: &&Route| (r.when.as_ref()).is_none_or(|c| c.judge(data, &routing.acls) == Verdict::Yes);
    routing
        .routes
        .iter()
        .find(matches)
        .map(|r| r.backend.as_str())
}

impl std::fmt::Display for Test {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.fetch {
            Fetch::Sni => "req_ssl_sni",
            Fetch::HelloType => "req_ssl_hello_type",
        })?;
        if self.nocase {
            f.write_str(" -i")?;
        }
        match self.method {
            Method::Exact => {}
            Method::Beginning => f.write_str(" -m beg")?,
            Method::End => f.write_str(" -m end")?,
            Method::Substring => f.write_str(" -m sub")?,
        }
        for p in &self.patterns {
            write!(f, " {p}")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.unless { "unless" } else { "if" })?;
        for (i, terms) in self.any.iter().enumerate() {
            if i > 0 {
                f.write_str(" ||")?;
            }
            for t in terms {
                f.write_str(if t.negate { " !" } else { " " })?;
                match &t.test {
                    Ok(test) => write!(f, "{{ {test} }}")?,
                    Err(name) => f.write_str(name)?,
                }
            }
        }
        Ok(())
    }
}
