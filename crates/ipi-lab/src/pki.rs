//! Certificates for the tests, made with the openssl command-line tool (Debian's openssl): a CA,
//! a server certificate for an address (its subjectAltName), two client certificates (one named
//! for no one, one for a user), and a second CA that signed none of them, for a peer that must
//! not be trusted.
//!
//! Keys are ECDSA P-256 (quick to make), written as PKCS#8 PEM; certificates last two days.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cmd, LabError};

/// Where Debian's openssl package installs the tool.
pub const OPENSSL: &str = "/usr/bin/openssl";

/// Whether openssl is installed; if not, the caller is skipped or, under CI, fails
/// ([`crate::tool`]).
pub fn available() -> bool {
    crate::tool(OPENSSL, "openssl")
}

/// A certificate and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The certificate (PEM).
    pub cert: PathBuf,
    /// Its private key (PKCS#8 PEM).
    pub key: PathBuf,
}

/// The files of a test PKI, all in one directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pki {
    /// The CA that signed the server and client certificates.
    pub ca: Pair,
    /// The server's certificate, for its address (and `localhost`).
    pub server: Pair,
    /// The client's certificate (common name [`CLIENT_NAME`]).
    pub client: Pair,
    /// A client certificate whose common name is the user given to [`Pki::make`]: etcd, with
    /// authentication on, takes it for that user without a password.
    pub user: Pair,
    /// A CA that signed none of them.
    pub other_ca: Pair,
}

/// The common name of the client certificate. No etcd user has it, so the certificate alone
/// authenticates nobody once etcd's authentication is on (etcd takes a certificate's common
/// name as its user).
pub const CLIENT_NAME: &str = "ipi-lab-client";

fn openssl(dir: &Path, args: &[&str]) -> Result<(), LabError> {
    cmd::check(Command::new(OPENSSL).current_dir(dir).args(args)).map(drop)
}

/// A self-signed CA named `name` as `NAME.pem` and `NAME.key` in `dir`.
fn make_ca(dir: &Path, name: &str, subject: &str) -> Result<Pair, LabError> {
    let (cert, key) = (format!("{name}.pem"), format!("{name}.key"));
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            subject,
            "-keyout",
            &key,
            "-out",
            &cert,
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    )?;
    Ok(Pair {
        cert: dir.join(cert),
        key: dir.join(key),
    })
}

/// A certificate named `name` for `cn` with extensions `ext`, signed by `ca`.
fn make_leaf(dir: &Path, ca: &Pair, name: &str, cn: &str, ext: &str) -> Result<Pair, LabError> {
    let (cert, key, csr, extfile) = (
        format!("{name}.pem"),
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.ext"),
    );
    std::fs::write(dir.join(&extfile), ext).map_err(LabError::io(format!(
        "write {}",
        dir.join(&extfile).display()
    )))?;
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            &format!("/CN={cn}"),
            "-keyout",
            &key,
            "-out",
            &csr,
        ],
    )?;
    let (ca_cert, ca_key) = (ca.cert.display().to_string(), ca.key.display().to_string());
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_cert,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &extfile,
            "-out",
            &cert,
        ],
    )?;
    Ok(Pair {
        cert: dir.join(cert),
        key: dir.join(key),
    })
}

impl Pki {
    /// Makes a CA, a server certificate for `server`, a client certificate and one for `user`
    /// in `dir`.
    pub fn make(dir: &Path, server: IpAddr, user: &str) -> Result<Pki, LabError> {
        std::fs::create_dir_all(dir).map_err(LabError::io(format!("create {}", dir.display())))?;
        let ca = make_ca(dir, "ca", "/CN=ipi-lab test CA")?;
        let leaf = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n";
        let server = make_leaf(
            dir,
            &ca,
            "server",
            "etcd",
            &format!("{leaf}extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:{server},DNS:localhost\n"),
        )?;
        let client_ext = format!("{leaf}extendedKeyUsage=clientAuth\n");
        let client = make_leaf(dir, &ca, "client", CLIENT_NAME, &client_ext)?;
        let user = make_leaf(dir, &ca, "user", user, &client_ext)?;
        let other_ca = make_ca(dir, "other-ca", "/CN=ipi-lab untrusted CA")?;
        Ok(Pki {
            ca,
            server,
            client,
            user,
            other_ca,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_certificate_names_its_address_and_chains_to_the_ca() {
        if !available() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::make(dir.path(), "127.0.0.1".parse().unwrap(), "someone").unwrap();
        let text = cmd::check(
            Command::new(OPENSSL)
                .args(["x509", "-noout", "-ext", "subjectAltName", "-in"])
                .arg(&pki.server.cert),
        )
        .unwrap()
        .stdout;
        assert!(text.contains("IP Address:127.0.0.1"), "{text}");
        let verify = |ca: &Path| {
            cmd::output(
                Command::new(OPENSSL)
                    .arg("verify")
                    .arg("-CAfile")
                    .arg(ca)
                    .arg(&pki.client.cert),
            )
            .unwrap()
            .success
        };
        assert!(verify(&pki.ca.cert));
        let subject = cmd::check(
            Command::new(OPENSSL)
                .args(["x509", "-noout", "-subject", "-in"])
                .arg(&pki.user.cert),
        )
        .unwrap()
        .stdout;
        assert!(subject.contains("CN = someone"), "{subject}");
        assert!(!verify(&pki.other_ca.cert));
    }
}
