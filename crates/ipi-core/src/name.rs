//! DNS names: the rules that cluster names, base domains and node names must follow, so that
//! what we render into DNS configuration is always a name a resolver accepts.

/// The longest DNS label (RFC 1035 2.3.4).
pub const MAX_LABEL: usize = 63;
/// The longest DNS name in text form, without the trailing dot (RFC 1035 2.3.4).
pub const MAX_NAME: usize = 253;

/// Check one label as RFC 1123 2.1 host names allow it: letters, digits and hyphens, 1 to 63
/// characters, neither starting nor ending with a hyphen. Says what is wrong otherwise.
pub fn check_label(label: &str) -> Result<(), String> {
    if label.is_empty() {
        return Err("a DNS label must not be empty".into());
    }
    if label.len() > MAX_LABEL {
        return Err(format!(
            "a DNS label must be at most {MAX_LABEL} characters"
        ));
    }
    if let Some(bad) = label
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-'))
    {
        return Err(format!(
            "{bad:?} is not allowed in a DNS label (letters, digits and '-' only)"
        ));
    }
    if label.starts_with('-') || label.ends_with('-') {
        return Err("a DNS label must start and end with a letter or digit".into());
    }
    Ok(())
}

/// Check a dotted name (`master-0.managed.example.com`): each label by [`check_label`], at most
/// 253 characters. A single trailing dot (a fully qualified name) is accepted.
pub fn check_name(name: &str) -> Result<(), String> {
    let bare = name.strip_suffix('.').unwrap_or(name);
    if bare.is_empty() {
        return Err("a DNS name must not be empty".into());
    }
    if bare.len() > MAX_NAME {
        return Err(format!("a DNS name must be at most {MAX_NAME} characters"));
    }
    for label in bare.split('.') {
        check_label(label).map_err(|e| format!("label {label:?}: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert!(check_label("managed-mbggk-master-0").is_ok());
        assert!(check_label("0abc").is_ok());
        assert!(check_label("").is_err());
        assert!(check_label("-a").is_err());
        assert!(check_label("a-").is_err());
        assert!(check_label("a_b").is_err());
        assert!(check_label("a.b").is_err());
        assert!(check_label(&"a".repeat(63)).is_ok());
        assert!(check_label(&"a".repeat(64)).is_err());
    }

    #[test]
    fn names() {
        assert!(check_name("managed.example.com").is_ok());
        assert!(check_name("managed.example.com.").is_ok());
        assert!(check_name("managed..example.com").is_err());
        assert!(check_name(".").is_err());
        assert!(check_name(&vec!["a".repeat(63); 4].join(".")).is_err());
    }
}
