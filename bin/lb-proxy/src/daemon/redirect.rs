//! The redirect of API VIP:6443 to lb-proxy's frontend, as OpenShift's haproxy monitor keeps
//! it: on after 3 healthy rounds in a row, off after 11 unhealthy ones; an nftables table of
//! our own (replaced atomically) and a flag file that keepalived's chk_ocp_lb tests for.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::openshift;

/// Healthy rounds in a row that turn the redirect on.
pub const ON_AFTER: u32 = 3;
/// Unhealthy rounds in a row that turn it off.
pub const OFF_AFTER: u32 = 11;
/// The port clients use for the API.
pub const API_PORT: u16 = 6443;
/// Our nftables table (family inet).
pub const TABLE: &str = "ipi_lb_proxy";

/// The rounds counted so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Debounce {
    on: bool,
    streak: u32,
}

impl Debounce {
    /// Counts one round; Some(new state) when the redirect should change.
    pub fn round(&mut self, healthy: bool) -> Option<bool> {
        if healthy == self.on {
            self.streak = 0;
            return None;
        }
        self.streak += 1;
        let needed = if healthy { ON_AFTER } else { OFF_AFTER };
        if self.streak >= needed {
            self.on = healthy;
            self.streak = 0;
            Some(healthy)
        } else {
            None
        }
    }

    /// On or off.
    pub fn is_on(&self) -> bool {
        self.on
    }
}

/// What the redirect does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The API VIPs.
    pub vips: Vec<IpAddr>,
    /// The file touched while the redirect is on.
    pub flag_file: Option<PathBuf>,
    /// How often health is looked at.
    pub interval: Duration,
}

/// What the command line asks of the redirect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The VIPs named (none: the cluster's, if any).
    pub vips: Vec<IpAddr>,
    /// No redirect, even on a cluster.
    pub off: bool,
    /// The flag file named.
    pub flag_file: Option<PathBuf>,
    /// How often health is looked at.
    pub interval: Duration,
}

impl Redirect {
    /// The redirect `run` keeps: the VIPs `wanted` names, else the cluster's API VIPs
    /// (`cluster_vips`, None when the configuration is no cluster's) unless `wanted.off`. On a
    /// cluster the flag file defaults to OpenShift's, which keepalived's chk_ocp_lb tests for.
    /// None when there is no VIP to redirect.
    pub fn choose(wanted: Wanted, cluster_vips: Option<&[IpAddr]>) -> Option<Redirect> {
        let cluster = cluster_vips.is_some();
        let vips = match cluster_vips {
            Some(api) if wanted.vips.is_empty() && !wanted.off => api.to_vec(),
            _ => wanted.vips,
        };
        let flag_file = wanted
            .flag_file
            .or_else(|| cluster.then(|| openshift::FLAG_FILE.into()));
        (!vips.is_empty()).then_some(Redirect {
            vips,
            flag_file,
            interval: wanted.interval,
        })
    }
}

/// Why the redirect could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// nft could not be run.
    #[error("nft: {0}")]
    Nft(#[from] std::io::Error),
    /// nft refused the rules; its own words.
    #[error("nft: {0}")]
    Refused(String),
    /// The flag file could not be written or removed.
    #[error("{}: {source}", path.display())]
    FlagFile {
        /// The flag file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The nftables script that installs the rules sending `vips`:6443 to `port` (replacing our
/// table as one transaction), or that removes our table when `port` is None.
pub fn script(vips: &[IpAddr], port: Option<u16>) -> String {
    // Declaring the table first makes the delete valid whether or not it exists.
    let mut s = format!("table inet {TABLE}\ndelete table inet {TABLE}\n");
    let Some(port) = port else {
        return s;
    };
    let matches = |v: &IpAddr| {
        let family = if v.is_ipv4() { "ip" } else { "ip6" };
        format!("{family} daddr {v} tcp dport {API_PORT} redirect to :{port}")
    };
    s.push_str(&format!("table inet {TABLE} {{\n"));
    s.push_str("    chain prerouting {\n        type nat hook prerouting priority dstnat; policy accept;\n");
    for v in vips {
        s.push_str(&format!("        {}\n", matches(v)));
    }
    s.push_str(
        "    }\n    chain output {\n        type nat hook output priority -100; policy accept;\n",
    );
    for v in vips {
        s.push_str(&format!("        oifname \"lo\" {}\n", matches(v)));
    }
    s.push_str("    }\n}\n");
    s
}

/// Applies `script` with `nft -f -`.
pub async fn apply(script: &str) -> Result<(), Error> {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new("nft")
        .args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(script.as_bytes()).await?;
    }
    let out = child.wait_with_output().await?;
    if out.status.success() {
        Ok(())
    } else {
        let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(Error::Refused(said))
    }
}

/// Turns the redirect on (rules and flag file) or off.
pub async fn set(r: &Redirect, port: Option<u16>) -> Result<(), Error> {
    let rules = apply(&script(&r.vips, port)).await;
    if let Some(flag) = &r.flag_file {
        let flagged = match port {
            // Its directory (OpenShift's /var/run/keepalived) is made if need be, as install -d.
            Some(_) if rules.is_ok() => flag
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map_or(Ok(()), ipi_core::atomic::create_dir)
                .and_then(|()| std::fs::write(flag, b"")),
            _ => std::fs::remove_file(flag).or_else(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            }),
        };
        flagged.map_err(|source| Error::FlagFile {
            path: flag.clone(),
            source,
        })?;
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_after_three_good_rounds_off_after_eleven_bad() {
        let mut d = Debounce::default();
        assert_eq!(d.round(true), None);
        assert_eq!(d.round(true), None);
        assert_eq!(d.round(false), None, "a bad round breaks the streak");
        assert_eq!(d.round(true), None);
        assert_eq!(d.round(true), None);
        assert_eq!(d.round(true), Some(true));
        assert!(d.is_on());
        for _ in 0..10 {
            assert_eq!(d.round(false), None);
        }
        assert_eq!(d.round(false), Some(false));
        assert_eq!(d.round(false), None);
    }

    #[test]
    fn a_cluster_redirects_its_api_vips_with_openshifts_flag_file() {
        let wanted = |vips: Vec<IpAddr>, off: bool| Wanted {
            vips,
            off,
            flag_file: None,
            interval: Duration::from_secs(1),
        };
        let api: Vec<IpAddr> = vec!["192.0.2.5".parse().unwrap()];
        let named: Vec<IpAddr> = vec!["192.0.2.9".parse().unwrap()];
        let r = Redirect::choose(wanted(Vec::new(), false), Some(&api)).unwrap();
        assert_eq!(r.vips, api);
        assert_eq!(r.flag_file, Some(openshift::FLAG_FILE.into()));
        let r = Redirect::choose(wanted(named.clone(), false), Some(&api)).unwrap();
        assert_eq!(r.vips, named, "VIPs named win");
        assert_eq!(r.flag_file, Some(openshift::FLAG_FILE.into()));
        assert_eq!(Redirect::choose(wanted(Vec::new(), true), Some(&api)), None);
        let r = Redirect::choose(wanted(named.clone(), false), None).unwrap();
        assert_eq!(
            (r.vips, r.flag_file),
            (named, None),
            "a haproxy.cfg: no flag file"
        );
        assert_eq!(Redirect::choose(wanted(Vec::new(), false), None), None);
    }

    #[test]
    fn the_rules() {
        let vips: Vec<IpAddr> = vec!["192.0.2.5".parse().unwrap(), "2001:db8::5".parse().unwrap()];
        let s = script(&vips, Some(9445));
        assert!(s.starts_with("table inet ipi_lb_proxy\ndelete table inet ipi_lb_proxy\n"));
        assert!(s.contains("        ip daddr 192.0.2.5 tcp dport 6443 redirect to :9445\n"));
        assert!(s.contains(
            "        oifname \"lo\" ip6 daddr 2001:db8::5 tcp dport 6443 redirect to :9445\n"
        ));
        assert_eq!(script(&vips, None).lines().count(), 2);
    }
}
