//! ipam against a real etcd as a security review would want it ([`Etcd::start_secure`]):
//! clients on https only with a certificate signed by the test's CA (made with openssl), and
//! authentication on, ipam's user allowed only under its prefix. With the right CA, client
//! certificate and password, `ipam pool reserve`, `ipam list` and CNI ADD/DEL work (the CNI
//! config in whereabouts' etcd keys, or our `store` URL with them); a wrong password, a missing
//! client certificate, an untrusted CA or no user each fail with an error that says so, and no
//! password is ever printed. Keys ipam cannot honour, and a whereabouts range with no shared
//! store, are refused by name before anything is opened.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

use common::{finish, pool_file, reported_line, secure_etcd, Run, Target, BIN};
use ipi_lab::etcd::{Etcd, PREFIX};
use serde_json::{json, Value};

/// The password of the lab's ipam user, which no output may show.
fn password(etcd: &Etcd) -> String {
    std::fs::read_to_string(etcd.password_file().unwrap())
        .unwrap()
        .trim_end()
        .to_owned()
}

/// `ipam pool reserve --name NAME` of a small pool in `store`.
fn reserve(dir: &Path, store: &Target, name: &str) -> Run {
    let pool = pool_file(dir, "tls", &["192.0.2.0/28"]);
    let mut command = store.command(Path::new(BIN));
    command
        .args([
            "pool", "reserve", "--json", "--name", name, "--store", &store.url,
        ])
        .arg("--pool")
        .arg(pool);
    finish(&mut command, b"")
}

/// `target` with one setting changed (`None` removes it).
fn with(target: &Target, key: &str, value: Option<&str>) -> Target {
    let mut t = target.clone();
    t.env.retain(|(k, _)| k != key);
    if let Some(v) = value {
        t.env.push((key.to_owned(), v.to_owned()));
    }
    t
}

/// A failure of the store (exit 3) whose message holds `why`, and no password.
fn refused(run: &Run, why: &str, etcd: &Etcd) {
    eprint!("{}", run.stderr);
    assert_eq!(run.code, Some(3), "{run:?}");
    assert!(
        run.stderr.to_lowercase().contains(&why.to_lowercase()),
        "{why:?} not in: {}",
        run.stderr
    );
    assert!(!run.stderr.contains(&password(etcd)), "{}", run.stderr);
}

/// The keys under ipam's prefix, as etcd's root sees them.
fn keys(etcd: &Etcd) -> Vec<String> {
    let out = etcd
        .ctl(["get", "--prefix", "--keys-only", PREFIX])
        .unwrap();
    assert!(out.success, "{}", out.stderr);
    out.stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn pool_reserve_and_list_work_over_tls_with_a_certificate_and_a_password() {
    let Some(etcd) = secure_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = Target::etcd(&etcd);
    let first = reserve(dir.path(), &store, "svc-a");
    assert!(first.ok, "{first:?}\n{}", etcd.log());
    let ip = reported_line(&first.stdout).unwrap();
    let again = reserve(dir.path(), &store, "svc-a");
    assert_eq!(reported_line(&again.stdout), Some(ip), "{again:?}");
    assert_eq!(
        common::listed_at(Path::new(BIN), &store)["pool/tls"].get(&ip),
        Some(&"svc-a".to_owned())
    );
    assert!(
        keys(&etcd).iter().any(|k| k.ends_with("/owners/svc-a")),
        "{:?}",
        keys(&etcd)
    );
    // The user by its certificate alone (its common name), with no password.
    let by_cert = reserve(dir.path(), &Target::etcd_by_certificate(&etcd), "svc-b");
    assert!(by_cert.ok, "{by_cert:?}");
    assert_ne!(reported_line(&by_cert.stdout), Some(ip));
}

#[test]
fn wrong_or_missing_credentials_fail_and_say_why() {
    let Some(etcd) = secure_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pki = etcd.pki().unwrap();
    let wrong = dir.path().join("wrong.password");
    std::fs::write(&wrong, "not-the-password\n").unwrap();
    let wrong = wrong.display().to_string();
    let other_ca = pki.other_ca.cert.display().to_string();
    let good = Target::etcd(&etcd);
    for (what, store, why) in [
        (
            "a wrong password",
            with(&good, "IPAM_ETCD_PASSWORD_FILE", Some(&wrong)),
            "authentication failed",
        ),
        (
            "no client certificate",
            with(&with(&good, "IPAM_ETCD_CERT", None), "IPAM_ETCD_KEY", None),
            "certificate",
        ),
        (
            "an untrusted CA",
            with(&good, "IPAM_ETCD_CACERT", Some(&other_ca)),
            "UnknownIssuer",
        ),
        (
            "no user (the certificate names none)",
            with(
                &with(&good, "IPAM_ETCD_USER", None),
                "IPAM_ETCD_PASSWORD_FILE",
                None,
            ),
            "permission denied",
        ),
    ] {
        eprintln!("{what}");
        refused(&reserve(dir.path(), &store, "svc"), why, &etcd);
    }
    assert!(keys(&etcd).is_empty(), "nothing was reserved");
    // Plaintext to an https server, with credentials: refused before anything is sent.
    let mut plain = Target::etcd(&etcd);
    plain.url = etcd.url().replace("etcd+https://", "etcd://");
    let run = reserve(dir.path(), &plain, "svc");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("--etcd-user") && run.stderr.contains("in the clear"),
        "{}",
        run.stderr
    );
}

/// A CNI call of `command` for container `ctr` with `ipam` as the config's ipam section.
fn cni(command: &str, ctr: &str, ipam: &Value) -> Run {
    let conf = json!({"cniVersion": "1.0.0", "name": "tlsnet", "type": "macvlan", "ipam": ipam});
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", ctr)
        .env("CNI_IFNAME", "eth0")
        .env("CNI_NETNS", "/proc/self/ns/net")
        .env("CNI_PATH", "/usr/lib/cni");
    finish(&mut cmd, conf.to_string().as_bytes())
}

/// whereabouts' etcd keys for the secure etcd, as its own configs give them.
fn whereabouts_keys(etcd: &Etcd) -> Value {
    let pki = etcd.pki().unwrap();
    json!({
        "type": "ipam",
        "range": "198.51.100.0/29",
        "datastore": "etcd",
        "etcd_host": format!("https://{}", etcd.endpoint()),
        "etcd_username": ipi_lab::etcd::USER,
        "etcd_password": password(etcd),
        "etcd_ca_cert_file": pki.ca.cert,
        "etcd_cert_file": pki.client.cert,
        "etcd_key_file": pki.client.key,
    })
}

fn added(run: &Run) -> IpAddr {
    assert!(run.ok, "{run:?}");
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let address = v["ips"][0]["address"].as_str().unwrap();
    address.split('/').next().unwrap().parse().unwrap()
}

/// The CNI error of a failed call: its code and message, which shows no password.
fn cni_error(run: &Run, etcd: &Etcd) -> (u64, String) {
    assert!(!run.ok, "{run:?}");
    assert!(!run.stdout.contains(&password(etcd)), "{}", run.stdout);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    (
        v["code"].as_u64().unwrap(),
        v["msg"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn cni_add_and_del_honour_whereabouts_etcd_keys() {
    let Some(etcd) = secure_etcd() else { return };
    let ipam = whereabouts_keys(&etcd);
    let a = added(&cni("ADD", "ctr-a", &ipam));
    let b = added(&cni("ADD", "ctr-b", &ipam));
    assert_ne!(a, b);
    assert_eq!(
        keys(&etcd).iter().filter(|k| k.contains("/ips/")).count(),
        2
    );
    // Our own store URL with the same keys for the files and the credentials.
    let mut own = ipam.clone();
    let own_map = own.as_object_mut().unwrap();
    own_map.remove("etcd_host");
    own_map.remove("datastore");
    own_map.insert("store".into(), json!(etcd.url()));
    assert_eq!(added(&cni("ADD", "ctr-a", &own)), a, "the same holding");
    for ctr in ["ctr-a", "ctr-b"] {
        let del = cni("DEL", ctr, &ipam);
        assert!(del.ok, "{del:?}");
    }
    assert!(
        !keys(&etcd).iter().any(|k| k.contains("/ips/")),
        "{:?}",
        keys(&etcd)
    );
    // A wrong password: the runtime is told, and may try again; nothing is held.
    let mut wrong = ipam.clone();
    wrong["etcd_password"] = json!("not-the-password");
    let (code, msg) = cni_error(&cni("ADD", "ctr-c", &wrong), &etcd);
    assert_eq!(code, 11, "{msg}");
    assert!(msg.contains("authentication failed"), "{msg}");
    // No client certificate.
    let mut bare = ipam.clone();
    let bare_map = bare.as_object_mut().unwrap();
    bare_map.remove("etcd_cert_file");
    bare_map.remove("etcd_key_file");
    let (_, msg) = cni_error(&cni("ADD", "ctr-c", &bare), &etcd);
    assert!(msg.to_lowercase().contains("certificate"), "{msg}");
    assert!(!keys(&etcd).iter().any(|k| k.contains("/ips/")));
}

#[test]
fn keys_ipam_cannot_honour_and_storeless_ranges_are_refused_by_name() {
    let Some(etcd) = secure_etcd() else { return };
    let good = whereabouts_keys(&etcd);
    let change = |key: &str, value: Value| {
        let mut v = good.clone();
        v[key] = value;
        v
    };
    let mut storeless = json!({"type": "ipam", "range": "198.51.100.0/29"});
    for (ipam, field, why) in [
        (
            change(
                "configuration_path",
                json!("/etc/cni/net.d/whereabouts.d/whereabouts.conf"),
            ),
            "ipam.configuration_path",
            "not read by ipam",
        ),
        (
            change("datastore", json!("kubernetes")),
            "ipam.datastore",
            "Kubernetes",
        ),
        (
            change("etcd_ca_cert_file", json!("ca.pem")),
            "ipam.etcd_ca_cert_file",
            "absolute",
        ),
        (storeless.clone(), "ipam", "no shared store"),
    ] {
        let (code, msg) = cni_error(&cni("ADD", "ctr-x", &ipam), &etcd);
        assert_eq!(code, 7, "{msg}");
        assert!(
            msg.contains(field) && msg.contains(why),
            "{field}, {why}: {msg}"
        );
    }
    assert!(keys(&etcd).is_empty(), "nothing was reserved");
    // Opting in to a directory on this node is explicit (a directory of the test's here).
    let dir = tempfile::tempdir().unwrap();
    storeless["node_local"] = json!(true);
    storeless["store"] = json!(dir.path().join("store"));
    added(&cni("ADD", "ctr-x", &storeless));
}

#[test]
fn etcd_settings_without_an_etcd_store_are_refused_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = ipi_lab::install_config(dir.path(), &["192.0.2.0/24"], &[], &[]);
    let store = dir.path().join("store");
    let mut suggest = Target::plain("").command(Path::new(BIN));
    suggest
        .args(["vip", "suggest", "--etcd-cacert", "/ca.pem", "--cluster"])
        .arg(&cluster);
    let mut list = Target::plain("").command(Path::new(BIN));
    list.args(["list", "--store"])
        .arg(&store)
        .env("IPAM_ETCD_USER", "ipam");
    for (mut command, setting, why) in [
        (suggest, "--etcd-cacert", "without --store"),
        (list, "--etcd-user (IPAM_ETCD_USER)", "directory"),
    ] {
        let run = finish(&mut command, b"");
        assert_eq!(run.code, Some(2), "{run:?}");
        assert!(
            run.stderr.contains(setting) && run.stderr.contains(why),
            "{}",
            run.stderr
        );
    }
    assert!(!store.exists(), "no store was made");
}
