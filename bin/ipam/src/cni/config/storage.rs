//! The keys of the `ipam` section about where reservations live, in both styles: our `store`
//! (a directory, `etcd://...` or `etcd+https://...`), whereabouts' etcd datastore keys with
//! whereabouts' meaning (`etcd_host`, `etcd_username`, `etcd_password`, `etcd_key_file`,
//! `etcd_cert_file`, `etcd_ca_cert_file`, `datastore`), and `node_local`.
//!
//! Every one is honoured or refused by name: whereabouts' Kubernetes datastore and its flat
//! configuration file (`configuration_path`) are not ipam's, and a whereabouts range, which is
//! cluster-wide, is refused without a shared store unless `"node_local": true` says the
//! directory on this node is meant (each node would hand out the same addresses).
use ipi_store::store::access::{EtcdAccess, Password, Secret, CNI_NAMES};
use ipi_store::store::{StoreSpec, DEFAULT_DIR, ETCD_SCHEMES};

use super::json::Obj;
use super::model::{invalid, ConfigError, Style};

/// The storage keys, accepted in both styles.
pub(super) const STORAGE_KEYS: [&str; 9] = [
    "store",
    "datastore",
    "etcd_host",
    "etcd_username",
    "etcd_password",
    "etcd_key_file",
    "etcd_cert_file",
    "etcd_ca_cert_file",
    "node_local",
];

/// Keys of whereabouts' that ipam cannot honour, with the reason given when one is used.
pub(super) const REFUSED_KEYS: [(&str, &str); 1] = [(
    "configuration_path",
    "whereabouts' flat configuration file is not read by ipam: put its keys (etcd_host, etcd_ca_cert_file, ...) in this ipam section",
)];

/// The store the section names and how to get into it.
pub(super) fn read_storage(o: &Obj<'_>, style: Style) -> Result<StoreSpec, ConfigError> {
    if let Some((key, why)) = REFUSED_KEYS.iter().find(|(k, _)| o.map.contains_key(*k)) {
        return Err(invalid(o.field(key), *why));
    }
    // Each network's pools are its own (or its `network_name`'s): ranges of two networks may
    // overlap, which is whereabouts' default, and its `false` cannot be honoured.
    if o.map.get("enable_overlapping_ranges") == Some(&serde_json::Value::Bool(false)) {
        return Err(invalid(
            o.field("enable_overlapping_ranges"),
            "false: ipam keeps each network's reservations in pools of its own, so two networks with overlapping ranges may hand out one address; only true (whereabouts' default) is honoured",
        ));
    }
    let access = read_access(o)?;
    let url = match (o.str("store")?, o.str("etcd_host")?) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                o.field("etcd_host"),
                "given with `store`: give one of them",
            ))
        }
        (Some(store), None) => check_store(store)?,
        (None, Some(host)) => etcd_host_url(o, host, &access)?,
        (None, None) => no_store(o, style)?,
    };
    let etcd = ETCD_SCHEMES.iter().any(|(s, _)| url.starts_with(s));
    check_datastore(o, etcd)?;
    if o.map.contains_key("node_local") && read_node_local(o)? && etcd {
        return Err(invalid(
            o.field("node_local"),
            "true, with an etcd store: a store is on this node or shared, not both",
        ));
    }
    let spec = StoreSpec { url, etcd: access };
    ipi_store::store::check(&spec).map_err(|e| match e {
        ipi_store::store::StoreError::Setting { setting, why, .. } => invalid(setting, why),
        other => invalid(o.field("store"), other.to_string()),
    })?;
    Ok(spec)
}

/// whereabouts' TLS files and credentials.
fn read_access(o: &Obj<'_>) -> Result<EtcdAccess, ConfigError> {
    let file = |key: &str| -> Result<Option<std::path::PathBuf>, ConfigError> {
        match o.str(key)? {
            Some(path) if path.starts_with('/') => Ok(Some(path.into())),
            Some(path) => Err(invalid(
                o.field(key),
                format!("{path:?} is not an absolute path (a plugin's working directory is anyone's guess)"),
            )),
            None => Ok(None),
        }
    };
    let mut access = EtcdAccess::named(CNI_NAMES);
    access.ca = file("etcd_ca_cert_file")?;
    access.cert = file("etcd_cert_file")?;
    access.key = file("etcd_key_file")?;
    access.user = o.str("etcd_username")?.map(str::to_owned);
    // The value is never in a message: only "not a string" if it is not one.
    access.password = o
        .str("etcd_password")?
        .map(|p| Password::Given(Secret::new(p)));
    Ok(access)
}

/// whereabouts' `etcd_host` as a store URL: `https://HOST:PORT` is etcd over TLS,
/// `http://HOST:PORT` plaintext, and a bare `HOST:PORT` TLS when a client certificate is
/// given (whereabouts turns TLS on with its certificate and key) and plaintext otherwise.
fn etcd_host_url(o: &Obj<'_>, host: &str, access: &EtcdAccess) -> Result<String, ConfigError> {
    if host.contains('@') {
        // user:password@HOST: not quoted back.
        return Err(invalid(
            o.field("etcd_host"),
            "credentials in etcd_host: give them as etcd_username and etcd_password".to_owned(),
        ));
    }
    let (tls, rest) = if let Some(rest) = host.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = host.strip_prefix("http://") {
        (false, rest)
    } else if host.contains("://") {
        return Err(invalid(
            o.field("etcd_host"),
            format!("{host:?}: the scheme is https:// or http:// (or none: HOST:PORT)"),
        ));
    } else {
        (access.cert.is_some() || access.key.is_some(), host)
    };
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() || rest.contains('/') {
        return Err(invalid(
            o.field("etcd_host"),
            format!("{host:?} is not [https://]HOST:PORT[,HOST:PORT...] (no path: the keys' prefix is ipam's own)"),
        ));
    }
    Ok(format!("etcd{}://{rest}", if tls { "+https" } else { "" }))
}

/// The store of a section that names none: host-local's is the directory on this node; a
/// whereabouts range is cluster-wide, so only with `"node_local": true`.
fn no_store(o: &Obj<'_>, style: Style) -> Result<String, ConfigError> {
    if style == Style::HostLocal || read_node_local(o)? {
        return Ok(DEFAULT_DIR.to_owned());
    }
    Err(invalid(
        "ipam",
        format!("no shared store: a whereabouts range is cluster-wide, and the directory on this node ({DEFAULT_DIR}) would give every node the same addresses; give etcd_host (with etcd_ca_cert_file, etcd_cert_file, etcd_key_file, etcd_username, etcd_password as the etcd needs) or store (etcd+https://HOST:PORT), or \"node_local\": true to mean this node's directory"),
    ))
}

fn read_node_local(o: &Obj<'_>) -> Result<bool, ConfigError> {
    match o.map.get("node_local") {
        None => Ok(false),
        Some(serde_json::Value::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid(o.field("node_local"), "not true or false")),
    }
}

/// whereabouts' `datastore`: `etcd` with an etcd store; its Kubernetes datastore is not ipam's.
fn check_datastore(o: &Obj<'_>, etcd: bool) -> Result<(), ConfigError> {
    match o.str("datastore")? {
        None => Ok(()),
        Some("etcd") if etcd => Ok(()),
        Some("etcd") => Err(invalid(
            o.field("datastore"),
            "\"etcd\", and the store is a directory: give etcd_host",
        )),
        Some("kubernetes") => Err(invalid(
            o.field("datastore"),
            "\"kubernetes\": whereabouts' Kubernetes datastore (IPPool resources) is not one ipam has; give etcd_host (whereabouts' etcd datastore) or store",
        )),
        Some(other) => Err(invalid(
            o.field("datastore"),
            format!("{other:?} is not a datastore (whereabouts knows etcd and kubernetes)"),
        )),
    }
}

/// A store URL a plugin can use whatever its working directory: an absolute path,
/// `file:///PATH`, `etcd://...` or `etcd+https://...`.
fn check_store(s: &str) -> Result<String, ConfigError> {
    let path = s.strip_prefix("file://").unwrap_or(s);
    let etcd = ETCD_SCHEMES
        .iter()
        .any(|(scheme, _)| s.len() > scheme.len() && s.starts_with(scheme));
    if etcd || path.starts_with('/') {
        return Ok(s.to_owned());
    }
    Err(invalid(
        "ipam.store",
        format!("{s:?}: give an absolute directory, file:///PATH, etcd://HOST:PORT or etcd+https://HOST:PORT (a plugin's working directory is anyone's guess)"),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::tests::conf;
    use super::*;

    fn refused(ipam: &str, field: &str, why: &str) {
        let e = conf(ipam).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(field) && text.contains(why), "{ipam}: {text}");
        assert_eq!(e.code(), 7, "{ipam}");
        assert!(!text.contains("s3cret"), "the password shows: {text}");
    }

    fn store(ipam: &str) -> StoreSpec {
        conf(ipam)
            .unwrap_or_else(|e| panic!("{ipam}: {e}"))
            .ipam
            .store
    }

    #[test]
    fn whereabouts_etcd_keys_have_whereabouts_meaning() {
        let s = store(
            r#"{"range":"192.0.2.0/24","datastore":"etcd","etcd_host":"https://192.0.2.9:2379","etcd_username":"ipam","etcd_password":"s3cret","etcd_ca_cert_file":"/ca.pem","etcd_cert_file":"/c.pem","etcd_key_file":"/k.pem"}"#,
        );
        assert_eq!(s.url, "etcd+https://192.0.2.9:2379");
        assert_eq!(s.etcd.ca.as_deref(), Some(std::path::Path::new("/ca.pem")));
        assert_eq!(s.etcd.user.as_deref(), Some("ipam"));
        assert_eq!(
            s.etcd.password,
            Some(Password::Given(Secret::new("s3cret")))
        );
        assert!(!format!("{s:?}").contains("s3cret"));
        // A bare HOST:PORT is TLS with a client certificate, plaintext without.
        let s = store(
            r#"{"range":"192.0.2.0/24","etcd_host":"192.0.2.9:2379","etcd_ca_cert_file":"/ca.pem","etcd_cert_file":"/c.pem","etcd_key_file":"/k.pem"}"#,
        );
        assert_eq!(s.url, "etcd+https://192.0.2.9:2379");
        let s = store(r#"{"range":"192.0.2.0/24","etcd_host":"http://192.0.2.9:2379/"}"#);
        assert_eq!(s.url, "etcd://192.0.2.9:2379");
        let s = store(r#"{"range":"192.0.2.0/24","node_local":true}"#);
        assert_eq!(s.url, DEFAULT_DIR);
        let s = store(r#"{"ranges":[[{"subnet":"192.0.2.0/24"}]]}"#);
        assert_eq!(s.url, DEFAULT_DIR);
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_by_name() {
        // Keys added to a whereabouts range, the field named, and why.
        let cases = [
            (r#""#, "ipam:", "no shared store"),
            (r#","node_local":false"#, "ipam:", "node_local"),
            (
                r#","datastore":"kubernetes","node_local":true"#,
                "ipam.datastore",
                "Kubernetes",
            ),
            (
                r#","configuration_path":"/etc/w.conf""#,
                "ipam.configuration_path",
                "not read",
            ),
            (
                r#","etcd_host":"a:1","store":"/s""#,
                "ipam.etcd_host",
                "one of them",
            ),
            (
                r#","etcd_host":"a:1","etcd_ca_cert_file":"/ca""#,
                "ipam.etcd_ca_cert_file",
                "plaintext",
            ),
            (
                r#","etcd_host":"https://a:1""#,
                "ipam.etcd_ca_cert_file",
                "missing",
            ),
            (
                r#","etcd_host":"https://a:1","etcd_ca_cert_file":"ca.pem""#,
                "ipam.etcd_ca_cert_file",
                "absolute",
            ),
            (r#","etcd_host":"a:1/x""#, "ipam.etcd_host", "no path"),
            (
                r#","etcd_host":"http://a:1","etcd_username":"u","etcd_password":"s3cret""#,
                "ipam.etcd_username",
                "in the clear",
            ),
            (
                r#","etcd_host":"https://a:1","etcd_ca_cert_file":"/ca","etcd_cert_file":"/c""#,
                "ipam.etcd_cert_file",
                "etcd_key_file",
            ),
            (
                r#","etcd_host":"https://a:1","etcd_ca_cert_file":"/ca","etcd_username":"u","etcd_password":7"#,
                "ipam.etcd_password",
                "not a string",
            ),
            (
                r#","store":"etcd://a:1","node_local":true"#,
                "ipam.node_local",
                "not both",
            ),
            (
                r#","store":"/s","etcd_username":"u","etcd_password":"s3cret""#,
                "ipam.etcd_username",
                "directory",
            ),
            (
                r#","store":"/s","datastore":"etcd""#,
                "ipam.datastore",
                "directory",
            ),
            (
                r#","store":"/s","enable_overlapping_ranges":false"#,
                "ipam.enable_overlapping_ranges",
                "only true",
            ),
        ];
        for (extra, field, why) in cases {
            refused(&format!(r#"{{"range":"192.0.2.0/24"{extra}}}"#), field, why);
        }
    }
}
