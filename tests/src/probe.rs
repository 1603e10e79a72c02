//! What a client on a lab host asks the cluster: the A records a DNS server gives
//! ([`dig`]) and which API server answers a plain HTTP request ([`get`]).
//!
//! Apart from [`crate::cluster`] because they are the client side only: they know addresses
//! and names, not nodes or steps, and never fail a step (a lost answer is an observation).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use ipi_lab::Host;

/// `dig @server` from `host` for the A records of `names`, in one run: name to addresses.
pub(crate) fn dig(
    host: &Host,
    server: Ipv4Addr,
    names: &[String],
) -> BTreeMap<String, Vec<String>> {
    let mut args = vec![
        format!("@{server}"),
        "+noall".into(),
        "+answer".into(),
        "+tries=1".into(),
        "+time=2".into(),
    ];
    for n in names {
        args.push(n.clone());
        args.push("A".into());
    }
    let mut out: BTreeMap<String, Vec<String>> =
        names.iter().map(|n| (n.clone(), Vec::new())).collect();
    let Ok(o) = host.run("dig", &args) else {
        return out;
    };
    for line in o.stdout.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [name, _, "IN", "A", address] = f.as_slice() {
            if let Some(list) = out.get_mut(name.trim_end_matches('.')) {
                list.push(address.to_string());
            }
        }
    }
    for list in out.values_mut() {
        list.sort();
    }
    out
}

/// One plain-HTTP request on a connection of its own; the answering server's name.
pub(crate) fn get(to: SocketAddr) -> std::io::Result<String> {
    let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(3)))?;
    s.write_all(b"GET / HTTP/1.1\r\nHost: api\r\nConnection: close\r\n\r\n")?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    if !answer.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(format!("answer: {answer}")));
    }
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").trim();
    Ok(body.to_string())
}
