//! The etcd client's options from [`EtcdAccess`]: timeouts, the leader requirement, TLS with
//! its CA bundle and client certificate, and a user with a password. Every file is read here,
//! as the store connects, and one that cannot be used (missing, not PEM, a FIFO, too large) is
//! named with the setting that gave it before anything is sent.

use std::path::Path;
use std::time::Duration;

use etcd_client::{Certificate, ConnectOptions, Identity, TlsOptions};

use super::access::{EtcdAccess, Password};
use super::record::StoreError;

/// How long connecting to an endpoint may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// The most a PEM file may hold (a certificate chain is a few KiB), and a password file.
const MAX_PEM: u64 = 1 << 20;
const MAX_PASSWORD: u64 = 4096;

/// The bytes of the file a setting names, at most `limit`: a regular file only (links are
/// followed: Kubernetes mounts a secret's files as links), so that a FIFO, a device or a
/// directory given by mistake is named rather than waited on or read without end.
fn read_setting(
    path: &Path,
    what: &'static str,
    setting: &str,
    limit: u64,
) -> Result<Vec<u8>, StoreError> {
    use std::io::Read;
    let io = |source: std::io::Error| StoreError::Io {
        path: path.to_owned(),
        what,
        source,
    };
    let invalid = |why: String| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{why} (given as {setting})"),
        ))
    };
    if !std::fs::metadata(path).map_err(io)?.is_file() {
        return Err(invalid("not a regular file".to_owned()));
    }
    let mut bytes = Vec::new();
    let file = std::fs::File::open(path).map_err(io)?;
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(invalid(format!("larger than {limit} bytes")));
    }
    Ok(bytes)
}

/// A PEM file's bytes, which must hold `marker` (`CERTIFICATE-----`, `PRIVATE KEY-----`):
/// a file of something else is named here rather than by a TLS handshake's failure.
fn read_pem(
    path: &Path,
    what: &'static str,
    setting: &str,
    marker: &str,
) -> Result<Vec<u8>, StoreError> {
    let io = |source: std::io::Error| StoreError::Io {
        path: path.to_owned(),
        what,
        source,
    };
    let bytes = read_setting(path, what, setting, MAX_PEM)?;
    if !bytes.windows(marker.len()).any(|w| w == marker.as_bytes()) {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not PEM (no \"-----BEGIN ...{marker}\" in it; given as {setting})"),
        )));
    }
    Ok(bytes)
}

/// The password `source` gives: as given, or the text of its file without a final newline.
/// Neither the password nor any part of the file is ever in a message.
fn password(source: &Password, setting: &str) -> Result<String, StoreError> {
    let path = match source {
        Password::Given(secret) => return Ok(secret.expose().to_owned()),
        Password::File(path) => path,
    };
    let io = |source: std::io::Error| StoreError::Io {
        path: path.clone(),
        what: "reading the etcd password",
        source,
    };
    let text = read_setting(path, "reading the etcd password", setting, MAX_PASSWORD)?;
    let text = String::from_utf8(text).map_err(|_| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text ({setting})"),
        ))
    })?;
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    if text.is_empty() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("empty ({setting})"),
        )));
    }
    // Only one final line ending is not the password's: a second line is a mistake that would
    // otherwise fail as a wrong password.
    if text.contains(['\n', '\r']) {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("more than one line ({setting})"),
        )));
    }
    Ok(text.to_owned())
}

/// The client's options: timeouts, the leader requirement, and what `access` gives (its files
/// read now, so that a missing or wrong one is named before any request).
pub(super) fn connect_options(access: &EtcdAccess) -> Result<ConnectOptions, StoreError> {
    // A member cut off from its cluster's leader refuses at once ("no leader") rather than
    // holding the request until it times out. Requests are timed by `run`, waiting for a
    // connection included.
    let mut options = ConnectOptions::new()
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_require_leader(true);
    let names = &access.names;
    if let Some(ca) = &access.ca {
        let ca = read_pem(
            ca,
            "reading the etcd CA bundle",
            names.ca,
            "CERTIFICATE-----",
        )?;
        let mut tls = TlsOptions::new().ca_certificate(Certificate::from_pem(ca));
        if let (Some(cert), Some(key)) = (&access.cert, &access.key) {
            let cert = read_pem(
                cert,
                "reading the etcd client certificate",
                names.cert,
                "CERTIFICATE-----",
            )?;
            let key = read_pem(
                key,
                "reading the etcd client key",
                names.key,
                "PRIVATE KEY-----",
            )?;
            tls = tls.identity(Identity::from_pem(cert, key));
        }
        options = options.with_tls(tls);
    }
    if let (Some(user), Some(source)) = (&access.user, &access.password) {
        // etcd's tokens expire when idle (--auth-token-ttl, 300 s): a store held open longer
        // (a follower) authenticates again rather than failing every request from then on.
        options = options
            .with_user(user.clone(), password(source, names.password)?)
            .with_auto_token_refresh(true);
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_cannot_be_used_are_named_and_no_password_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let not_pem = file("ca.pem", "hunter2\n");
        let e = read_pem(&not_pem, "reading", "--etcd-cacert", "CERTIFICATE-----").unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("ca.pem") && e.contains("not PEM") && e.contains("--etcd-cacert"),
            "{e}"
        );
        assert!(!e.contains("hunter2"), "{e}");
        let missing = dir.path().join("missing.pem");
        assert!(read_pem(&missing, "reading", "x", "CERTIFICATE-----")
            .unwrap_err()
            .to_string()
            .contains("missing.pem"));
        let f = |p| Password::File(p);
        assert_eq!(
            password(&f(file("p", "hunter2\r\n")), "p").unwrap(),
            "hunter2"
        );
        assert_eq!(password(&f(file("q", "hunter2")), "q").unwrap(), "hunter2");
        let e = password(&f(file("e", "\n")), "--etcd-password-file").unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = password(&f(missing), "--etcd-password-file").unwrap_err();
        assert!(e.to_string().contains("missing.pem"), "{e}");
        // A second line is not a password; nothing of it is shown.
        let e = password(&f(file("two", "hunter2\n\n")), "p").unwrap_err();
        assert!(e.to_string().contains("more than one line"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[test]
    fn a_fifo_a_directory_or_an_endless_file_is_named_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let huge = dir.path().join("huge");
        std::fs::write(&huge, vec![b'a'; MAX_PASSWORD as usize + 1]).unwrap();
        for (path, why) in [
            (fifo.as_path(), "not a regular file"),
            (dir.path(), "not a regular file"),
            (huge.as_path(), "larger than 4096 bytes"),
        ] {
            let e = password(&Password::File(path.to_owned()), "--etcd-password-file");
            let e = e.unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("--etcd-password-file"), "{e}");
        }
        let e = read_pem(Path::new("/dev/zero"), "reading", "--etcd-cacert", "X").unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
