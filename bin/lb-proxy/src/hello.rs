//! What a TLS client's first bytes say, read as haproxy 2.6's `req_ssl_hello_type` and
//! `req_ssl_sni` read them (`smp_fetch_ssl_hello_type`, `smp_fetch_ssl_hello_sni` in
//! payload.c): the first record's handshake type, and the server name of a ClientHello. Sans
//! IO: bytes in, an answer out, [`Read::Incomplete`] while more bytes could change it.

/// What the bytes say, or that they cannot say it yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read<T> {
    /// Not enough bytes yet: more may give an answer.
    Incomplete,
    /// No answer whatever comes (not TLS, not a ClientHello, no server name).
    Absent,
    /// The answer.
    Found(T),
}

/// A TLS record that carries a handshake.
const HANDSHAKE: u8 = 0x16;

/// The handshake type of the first record (1: ClientHello), as `req_ssl_hello_type`: an
/// SSLv3-style record header (types 0x14 to 0x17, or 0xff), SSLv3 or later, room for a
/// handshake header, and the whole first handshake message.
pub fn hello_type(data: &[u8]) -> Read<u8> {
    match data.first() {
        None => return Read::Incomplete,
        Some(&b) if !(0x14..=0x17).contains(&b) && b != 0xff => return Read::Absent,
        Some(_) => {}
    }
    let (Some(version), Some(record), Some(length)) =
        (number(data, 1, 2), number(data, 3, 2), number(data, 6, 3))
    else {
        return Read::Incomplete;
    };
    if version < 0x0300 || record < 4 {
        return Read::Absent;
    }
    if data.len() < length + 9 {
        return Read::Incomplete;
    }
    Read::Found(data[5])
}

/// Bytes after `at` as a big-endian number of `n` bytes, if there are that many.
fn number(data: &[u8], at: usize, n: usize) -> Option<usize> {
    let bytes = data.get(at..at.checked_add(n)?)?;
    Some(bytes.iter().fold(0, |v, &b| (v << 8) | usize::from(b)))
}

/// The server name of the ClientHello at the start of `data`, as `req_ssl_sni`: the
/// record and handshake headers checked, the whole ClientHello present, the first
/// `server_name` entry of type host_name.
pub fn server_name(data: &[u8]) -> Read<String> {
    // The record header: handshake, SSLv3 or later, a length long enough for extensions.
    match data.first() {
        None => return Read::Incomplete,
        Some(&b) if b != HANDSHAKE => return Read::Absent,
        Some(_) => {}
    }
    match data.get(1) {
        None => return Read::Incomplete,
        Some(&major) if major < 3 => return Read::Absent,
        Some(_) => {}
    }
    let Some(record) = number(data, 3, 2) else {
        return Read::Incomplete;
    };
    // msg_type, length, version, random, session id, ciphers, compression, extensions.
    const SHORTEST: usize = 1 + 3 + 2 + 32 + 1 + 2 + 2 + 1 + 1 + 2 + 2;
    if record < SHORTEST {
        return Read::Absent;
    }
    match data.get(5) {
        None => return Read::Incomplete,
        Some(&1) => {}
        Some(_) => return Read::Absent,
    }
    let Some(length) = number(data, 6, 3) else {
        return Read::Incomplete;
    };
    if length < SHORTEST - 4 {
        return Read::Absent;
    }
    // The whole ClientHello. (haproxy compares its length with what follows the record
    // header, 4 bytes short of it, and then reads what has not come: here it is waited for.)
    let Some(hello) = data.get(9..9 + length) else {
        return Read::Incomplete;
    };
    match in_hello(hello) {
        Some(name) => Read::Found(name),
        None => Read::Absent,
    }
}

/// The host name in a whole ClientHello body (after its 4-byte header); None when it has none
/// or is malformed, as haproxy's checks decide.
fn in_hello(hello: &[u8]) -> Option<String> {
    // TLS 1.0 at least.
    if *hello.first()? < 3 || *hello.get(1)? < 1 {
        return None;
    }
    let session = usize::from(*hello.get(34)?);
    if session > 32 || session > hello.len().checked_sub(35)? {
        return None;
    }
    let mut at = 35 + session;
    let ciphers = number(hello, at, 2)?;
    if hello.len() - at < 4 || ciphers < 2 || ciphers > hello.len() - at {
        return None;
    }
    at += 2 + ciphers;
    let methods = usize::from(*hello.get(at)?);
    if hello.len() - at < 2 || methods < 1 || methods > hello.len() - at {
        return None;
    }
    at += 1 + methods;
    let total = number(hello, at, 2)?;
    if hello.len() - at < 2 || total > hello.len() - at - 2 {
        return None;
    }
    at += 2;
    let mut left = total;
    while left >= 4 {
        let kind = number(hello, at, 2)?;
        let size = number(hello, at + 2, 2)?;
        if size > left - 4 {
            return None;
        }
        if kind == 0 {
            // server_name: a list length, then entries of a type, a length and the name.
            let list = number(hello, at + 4, 2)?;
            if size < 2 || list < 4 || list > left.checked_sub(6)? {
                return None;
            }
            if *hello.get(at + 6)? == 0 {
                let n = number(hello, at + 7, 2)?;
                let name = hello.get(at + 9..at + 9 + n)?;
                return Some(String::from_utf8_lossy(name).into_owned());
            }
        }
        left -= 4 + size;
        at += 4 + size;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello as a TLS 1.2 client sends it, with `extensions` (type, body).
    fn client_hello(extensions: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut ext = Vec::new();
        for (kind, body) in extensions {
            ext.extend(kind.to_be_bytes());
            ext.extend(u16::try_from(body.len()).unwrap().to_be_bytes());
            ext.extend(body);
        }
        let mut hello = vec![3, 3];
        hello.extend([7u8; 32]); // random
        hello.push(0); // no session id
        hello.extend([0, 2, 0x13, 0x01]); // one cipher suite
        hello.extend([1, 0]); // no compression
        hello.extend(u16::try_from(ext.len()).unwrap().to_be_bytes());
        hello.extend(ext);
        let mut handshake = vec![1];
        handshake.extend(&u32::try_from(hello.len()).unwrap().to_be_bytes()[1..]);
        handshake.extend(hello);
        let mut record = vec![HANDSHAKE, 3, 1];
        record.extend(u16::try_from(handshake.len()).unwrap().to_be_bytes());
        record.extend(handshake);
        record
    }

    fn sni(name: &str) -> (u16, Vec<u8>) {
        let mut entry = vec![0];
        entry.extend(u16::try_from(name.len()).unwrap().to_be_bytes());
        entry.extend(name.as_bytes());
        let mut body = u16::try_from(entry.len()).unwrap().to_be_bytes().to_vec();
        body.extend(entry);
        (0, body)
    }

    #[test]
    fn the_server_name_of_a_whole_client_hello() {
        let hello = client_hello(&[(10, vec![0, 2, 0, 29]), sni("api.example.com")]);
        assert_eq!(server_name(&hello), Read::Found("api.example.com".into()));
        assert_eq!(hello_type(&hello), Read::Found(1));
        // Every shorter prefix may still become it; none is an answer yet.
        for n in 0..hello.len() {
            assert_eq!(server_name(&hello[..n]), Read::Incomplete, "{n} bytes");
        }
        assert_eq!(hello_type(&hello[..8]), Read::Incomplete);
        assert_eq!(hello_type(&hello[..hello.len() - 1]), Read::Incomplete);
    }

    #[test]
    fn no_name_and_not_tls_are_absent() {
        assert_eq!(
            server_name(&client_hello(&[(10, vec![0, 2, 0, 29])])),
            Read::Absent
        );
        assert_eq!(server_name(b"GET / HTTP/1.1\r\n\r\n"), Read::Absent);
        assert_eq!(hello_type(b"GET / HTTP/1.1\r\n\r\n"), Read::Absent);
        // SSLv2's record layer.
        assert_eq!(server_name(&[HANDSHAKE, 2, 0, 0, 60]), Read::Absent);
        // A server name entry whose length runs past the extension.
        let mut bad = client_hello(&[sni("a.example")]);
        let n = bad.len();
        bad[n - 10] = 0xff;
        assert_eq!(server_name(&bad), Read::Absent);
    }
}
