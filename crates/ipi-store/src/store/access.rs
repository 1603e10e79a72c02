//! How ipam is let into etcd: the CA bundle it trusts (`etcd+https://`), its client
//! certificate and key (etcd's `--client-cert-auth`), and a user with a password (etcd's
//! `auth enable`). Pure: files are only named here; the store reads them when it connects
//! ([`super::etcd`]), so a setting that cannot be used is found before anything is opened.
//!
//! Each setting is named in messages as it was given: a command-line option
//! ([`CLI_NAMES`]) or a key of a CNI config ([`CNI_NAMES`]). A password is never shown: its
//! [`Secret`] (ipi-core's) prints as `<redacted>`.

use std::path::PathBuf;

pub use ipi_core::secret::Secret;

/// Where the password comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Password {
    /// Given as it is (whereabouts' `etcd_password`).
    Given(Secret),
    /// Read from this file when the store connects: its text, without a final newline.
    File(PathBuf),
}

/// What each setting is called where it was given, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names {
    /// The CA bundle.
    pub ca: &'static str,
    /// The client certificate.
    pub cert: &'static str,
    /// The client certificate's key.
    pub key: &'static str,
    /// The user.
    pub user: &'static str,
    /// The password.
    pub password: &'static str,
}

/// The command line's names (with their environment variables).
pub const CLI_NAMES: Names = Names {
    ca: "--etcd-cacert (IPAM_ETCD_CACERT)",
    cert: "--etcd-cert (IPAM_ETCD_CERT)",
    key: "--etcd-key (IPAM_ETCD_KEY)",
    user: "--etcd-user (IPAM_ETCD_USER)",
    password: "--etcd-password-file (IPAM_ETCD_PASSWORD_FILE)",
};

/// A CNI config's names: whereabouts' keys of the `ipam` section.
pub const CNI_NAMES: Names = Names {
    ca: "ipam.etcd_ca_cert_file",
    cert: "ipam.etcd_cert_file",
    key: "ipam.etcd_key_file",
    user: "ipam.etcd_username",
    password: "ipam.etcd_password",
};

/// The settings of one etcd store; all empty for a store that needs none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdAccess {
    /// The CA bundle (PEM) that signed etcd's server certificate.
    pub ca: Option<PathBuf>,
    /// The client certificate (PEM).
    pub cert: Option<PathBuf>,
    /// Its private key (PEM).
    pub key: Option<PathBuf>,
    /// The etcd user.
    pub user: Option<String>,
    /// The user's password.
    pub password: Option<Password>,
    /// How the settings were named where they were given.
    pub names: Names,
}

impl Default for EtcdAccess {
    fn default() -> Self {
        Self::named(CLI_NAMES)
    }
}

/// A setting that cannot be used: its name and why.
pub type Refusal = (&'static str, String);

impl EtcdAccess {
    /// No settings, named `names` once given.
    pub fn named(names: Names) -> Self {
        Self {
            ca: None,
            cert: None,
            key: None,
            user: None,
            password: None,
            names,
        }
    }

    /// The name of the first setting given, if any.
    pub fn first_given(&self) -> Option<&'static str> {
        let n = &self.names;
        [
            (self.ca.is_some(), n.ca),
            (self.cert.is_some(), n.cert),
            (self.key.is_some(), n.key),
            (self.user.is_some(), n.user),
            (self.password.is_some(), n.password),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }

    /// Whether the settings fit a store: `etcd` whether it is etcd at all, `tls` whether it is
    /// `etcd+https://`. Each setting is used or refused, never ignored.
    pub fn check(&self, etcd: bool, tls: bool) -> Result<(), Refusal> {
        let n = &self.names;
        if !etcd {
            return match self.first_given() {
                Some(name) => Err((
                    name,
                    "is for an etcd store; this store is a directory".into(),
                )),
                None => Ok(()),
            };
        }
        for (a, a_name, b, b_name, what) in [
            (
                self.cert.is_some(),
                n.cert,
                self.key.is_some(),
                n.key,
                "a client certificate needs its key and the key its certificate",
            ),
            (
                self.user.is_some(),
                n.user,
                self.password.is_some(),
                n.password,
                "a user needs its password and a password its user",
            ),
        ] {
            if a != b {
                let (given, missing) = if a {
                    (a_name, b_name)
                } else {
                    (b_name, a_name)
                };
                return Err((given, format!("given without {missing}: {what}")));
            }
        }
        if tls {
            if self.ca.is_none() {
                return Err((
                    n.ca,
                    "missing: etcd+https:// needs the CA bundle (PEM) that signed etcd's server certificate".into(),
                ));
            }
            return Ok(());
        }
        if self.user.is_some() {
            return Err((
                n.user,
                "the password would cross the network in the clear over etcd://: use etcd+https://"
                    .into(),
            ));
        }
        match self.first_given() {
            Some(name) => Err((
                name,
                "is for TLS, and the store is plaintext etcd://: use etcd+https://".into(),
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access() -> EtcdAccess {
        EtcdAccess::default()
    }

    #[test]
    fn secrets_never_show() {
        let s = Secret::new("hunter2");
        assert!(!format!("{s:?}").contains("hunter2"));
        let mut a = access();
        a.password = Some(Password::Given(s));
        assert!(!format!("{a:?}").contains("hunter2"));
    }

    #[test]
    fn every_setting_is_used_or_refused_by_name() {
        let file = || Some(PathBuf::from("/f"));
        assert_eq!(access().check(false, false), Ok(()));
        assert_eq!(access().check(true, false), Ok(()));
        let refused = |a: &EtcdAccess, etcd, tls, name: &str, why: &str| {
            let (n, w) = a.check(etcd, tls).unwrap_err();
            assert_eq!(n, name, "{w}");
            assert!(w.contains(why), "{n}: {w}");
        };
        refused(&access(), true, true, CLI_NAMES.ca, "needs the CA bundle");
        let mut a = access();
        a.ca = file();
        assert_eq!(a.check(true, true), Ok(()));
        refused(&a, true, false, CLI_NAMES.ca, "plaintext");
        refused(&a, false, false, CLI_NAMES.ca, "directory");
        a.cert = file();
        refused(&a, true, true, CLI_NAMES.cert, "without --etcd-key");
        a.cert = None;
        a.key = file();
        refused(&a, true, true, CLI_NAMES.key, "without --etcd-cert");
        a.cert = file();
        assert_eq!(a.check(true, true), Ok(()));
        a.user = Some("ipam".into());
        refused(
            &a,
            true,
            true,
            CLI_NAMES.user,
            "without --etcd-password-file",
        );
        a.password = Some(Password::File("/p".into()));
        assert_eq!(a.check(true, true), Ok(()));
        let mut plain = EtcdAccess::named(CNI_NAMES);
        plain.user = Some("ipam".into());
        plain.password = Some(Password::Given(Secret::new("x")));
        refused(&plain, true, false, CNI_NAMES.user, "in the clear");
    }
}
