//! An instance's `authentication` block: PASS (the password in the advert) or AH
//! (keepalived's IPsec Authentication Header keyed with it), with keepalived's leniency and
//! its rules for where AH cannot run.

use ipi_core::secret::Secret;
use ipi_core::vrrp::Version;

use super::super::error::Found;
use super::super::model::{GlobalDefs, VrrpInstance};
use super::super::tree::Node;
use super::args::{block, one, unknown};
use crate::fsm::InitialState;

/// `authentication { auth_type PASS|AH  auth_pass PASSWORD }`.
pub(super) fn authentication(node: &Node, i: &mut VrrpInstance, errors: &mut Found) {
    let (mut kind, mut pass) = (None, None);
    for n in block(node, errors) {
        match n.keyword.as_str() {
            "auth_type" => kind = one(n, errors).map(|k| (k.to_string(), n.location.clone())),
            "auth_pass" => pass = one(n, errors).map(Secret::from),
            _ => unknown(n, "authentication", errors),
        }
    }
    let Some((kind, location)) = kind else {
        errors.push(
            &node.location,
            "authentication needs both `auth_type PASS|AH` and `auth_pass`",
        );
        return;
    };
    match (kind.as_str(), pass) {
        ("PASS" | "AH", Some(pass)) => {
            i.auth_ah = kind == "AH";
            i.auth_pass = Some(pass);
        }
        // `auth_type PASS;`, seen in real files: keepalived reads `PASS;` as a type it does
        // not know and runs the instance without authentication. vrrpd does the same, so
        // that the two agree on the wire, and says so loudly.
        ("PASS;" | "AH;", _) => errors.warn(
            &location,
            format!(
                "`auth_type {kind}`: keepalived reads the type as `{kind}`, which it does not \
                 know, and runs this instance WITHOUT authentication; vrrpd does the same so \
                 that both agree on the wire (remove the `;` to authenticate)"
            ),
        ),
        ("PASS" | "AH", None) => errors.push(
            &node.location,
            format!("authentication: `auth_type {kind}` needs `auth_pass`"),
        ),
        (other, _) => errors.push(
            &location,
            format!("`auth_type {other}`: must be PASS or AH"),
        ),
    }
}

/// What keepalived makes of AH once the whole instance is read: no AH over IPv6 or in VRRPv3
/// (it reports the error and runs without authentication, which vrrpd does too, so that both
/// send the same adverts), and no starting as master (a router must hear its group's sequence
/// number before it sends: it starts as backup).
pub(super) fn settle(i: &mut VrrpInstance, global: &GlobalDefs, errors: &mut Found) {
    if !i.auth_ah {
        return;
    }
    let without = if i.is_ipv6() {
        Some("IPv6")
    } else if i.effective_version(global) == Version::V3 {
        Some("VRRPv3")
    } else {
        None
    };
    if let Some(what) = without {
        errors.warn(
            &i.location,
            format!(
                "vrrp_instance {}: `auth_type AH` cannot be used with {what}: keepalived \
                 ignores it and runs WITHOUT authentication; so does vrrpd",
                i.name
            ),
        );
        i.auth_ah = false;
        i.auth_pass = None;
        return;
    }
    if i.state == Some(InitialState::Master) && i.priority != 255 {
        errors.warn(
            &i.location,
            format!(
                "vrrp_instance {}: `state MASTER` with `auth_type AH`: the instance starts as \
                 BACKUP, as keepalived's does, to learn its group's AH sequence number before \
                 it sends",
                i.name
            ),
        );
        i.state = Some(InitialState::Backup);
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{parse_str, read_str, Config, LexOptions};
    use ipi_core::vrrp::Auth;

    fn read(text: &str) -> (Config, String) {
        let r = read_str(text, "k.conf", &LexOptions::default());
        (r.config.unwrap(), r.warnings.to_string())
    }

    fn instance(auth: &str, rest: &str) -> String {
        format!(
            "vrrp_instance A {{\n interface eth0\n virtual_router_id 51\n priority 100\n \
             authentication {{\n  {auth}\n }}\n {rest}\n}}\n"
        )
    }

    #[test]
    fn ah_keys_the_header_with_the_password() {
        let c = parse_str(
            &instance(
                "auth_type AH\n  auth_pass secret",
                "virtual_ipaddress { 192.0.2.100 }",
            ),
            "k.conf",
        )
        .unwrap();
        let i = &c.instances[0];
        assert_eq!(i.auth(), Auth::Ah);
        assert_eq!(
            i.ah_key(),
            Some(ipi_core::vrrp::ah::Key::from_password("secret"))
        );
    }

    #[test]
    fn ah_over_ipv6_or_v3_runs_without_authentication_with_a_warning() {
        for (rest, what) in [
            ("virtual_ipaddress { 2001:db8::100 }", "IPv6"),
            ("version 3\n virtual_ipaddress { 192.0.2.100 }", "VRRPv3"),
        ] {
            let text = instance("auth_type AH\n  auth_pass secret", rest);
            let (c, warnings) = read(&text);
            assert_eq!(c.instances[0].auth(), Auth::None, "{what}");
            assert_eq!(c.instances[0].ah_key(), None);
            assert!(
                warnings.contains(&format!("cannot be used with {what}")),
                "{warnings}"
            );
            assert!(warnings.contains("k.conf:1"), "{warnings}");
        }
    }

    #[test]
    fn ah_starts_as_backup_unless_the_owner() {
        let text = instance(
            "auth_type AH\n  auth_pass secret",
            "state MASTER\n virtual_ipaddress { 192.0.2.100 }",
        );
        let (c, warnings) = read(&text);
        assert_eq!(c.instances[0].state, Some(crate::fsm::InitialState::Backup));
        assert!(warnings.contains("starts as BACKUP"), "{warnings}");
        let owner = text.replace("priority 100", "priority 255");
        let c = parse_str(&owner, "k.conf").unwrap();
        assert_eq!(c.instances[0].state, Some(crate::fsm::InitialState::Master));
    }

    #[test]
    fn a_type_without_a_password_or_an_unknown_type_names_the_line() {
        let e = parse_str(&instance("auth_type AH", ""), "k.conf").unwrap_err();
        assert!(e.to_string().contains("k.conf:5"), "{e}");
        assert!(
            e.to_string().contains("`auth_type AH` needs `auth_pass`"),
            "{e}"
        );
        let e = parse_str(&instance("auth_type MD5\n  auth_pass x", ""), "k.conf").unwrap_err();
        assert!(e.to_string().contains("k.conf:6"), "{e}");
        assert!(e.to_string().contains("must be PASS or AH"), "{e}");
    }
}
