//! DNS names: the rules that cluster names, base domains and node names must follow, so that
//! what we render into DNS configuration is always a name a resolver accepts.

/// The longest DNS label (RFC 1035 2.3.4).
pub const MAX_LABEL: usize = 63;
/// The longest DNS name in text form, without the trailing dot (RFC 1035 2.3.4).
pub const MAX_NAME: usize = 253;

/// What is wrong with a DNS name or label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// A label of no characters.
    #[error("a DNS label must not be empty")]
    EmptyLabel,
    /// A label over [`MAX_LABEL`] characters.
    #[error("a DNS label must be at most {MAX_LABEL} characters")]
    LongLabel,
    /// A character other than a letter, a digit or '-'.
    #[error("{0:?} is not allowed in a DNS label (letters, digits and '-' only)")]
    Character(char),
    /// A label that starts or ends with '-'.
    #[error("a DNS label must start and end with a letter or digit")]
    Hyphen,
    /// A name of no characters.
    #[error("a DNS name must not be empty")]
    EmptyName,
    /// A name over [`MAX_NAME`] characters.
    #[error("a DNS name must be at most {MAX_NAME} characters")]
    LongName,
    /// One label of a dotted name.
    #[error("label {label:?}: {why}")]
    Label {
        /// The label.
        label: String,
        /// What is wrong with it.
        why: Box<NameError>,
    },
}

/// Check one label as RFC 1123 2.1 host names allow it: letters, digits and hyphens, 1 to 63
/// characters, neither starting nor ending with a hyphen. Says what is wrong otherwise.
pub fn check_label(label: &str) -> Result<(), NameError> {
    if label.is_empty() {
        return Err(NameError::EmptyLabel);
    }
    if label.len() > MAX_LABEL {
        return Err(NameError::LongLabel);
    }
    if let Some(bad) = label
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-'))
    {
        return Err(NameError::Character(bad));
    }
    if label.starts_with('-') || label.ends_with('-') {
        return Err(NameError::Hyphen);
    }
    Ok(())
}

/// Check a dotted name (`master-0.managed.example.com`): each label by [`check_label`], at most
/// 253 characters. A single trailing dot (a fully qualified name) is accepted.
pub fn check_name(name: &str) -> Result<(), NameError> {
    let bare = name.strip_suffix('.').unwrap_or(name);
    if bare.is_empty() {
        return Err(NameError::EmptyName);
    }
    if bare.len() > MAX_NAME {
        return Err(NameError::LongName);
    }
    for label in bare.split('.') {
        check_label(label).map_err(|why| NameError::Label {
            label: label.to_string(),
            why: Box::new(why),
        })?;
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
