//! Secrets held in memory: a password out of sight in logs, `Debug` output and error messages,
//! and compared in constant time.

use std::fmt;

/// What [`Secret`]'s `Debug` and `Display` print in place of the secret.
pub const REDACTED: &str = "<redacted>";

/// A password or key: `Debug` and `Display` print [`REDACTED`], never the text; equality takes
/// the same time wherever two secrets of one length differ ([`eq`]). The text itself only by
/// [`Secret::expose`], where it must be used (on the wire, in a written config).
#[derive(Clone, Default)]
pub struct Secret(String);

impl Secret {
    /// The secret `text`.
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// The text: for where it is used, never for a log line.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `given` is the secret, in time that depends on the lengths only.
    pub fn matches(&self, given: &[u8]) -> bool {
        eq(self.0.as_bytes(), given)
    }

    /// Its length in bytes (not secret: the wire or the format shows it).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl PartialEq for Secret {
    /// Constant time, as [`Secret::matches`].
    fn eq(&self, other: &Secret) -> bool {
        eq(self.0.as_bytes(), other.0.as_bytes())
    }
}

impl Eq for Secret {}

impl From<String> for Secret {
    fn from(text: String) -> Secret {
        Secret(text)
    }
}

impl From<&str> for Secret {
    fn from(text: &str) -> Secret {
        Secret(text.to_string())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Whether `a` and `b` are equal, in time that depends on their lengths only: every byte is
/// looked at whatever the first difference, and the optimiser is kept from stopping early.
pub fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_printed() {
        let s = Secret::new("hunter22");
        assert_eq!(format!("{s}"), REDACTED);
        assert_eq!(format!("{s:?}"), REDACTED);
        assert_eq!(format!("{:?}", Some(&s)), format!("Some({REDACTED})"));
        assert_eq!(s.expose(), "hunter22");
        assert_eq!(s.len(), 8);
    }

    #[test]
    fn equality() {
        let s = Secret::new("hunter22");
        assert!(s.matches(b"hunter22"));
        assert!(!s.matches(b"hunter23"));
        assert!(!s.matches(b"hunter2"));
        assert!(!s.matches(b""));
        assert!(eq(b"", b""));
        assert!(!eq(b"a", b"b"));
        assert_eq!(s, Secret::from("hunter22"));
        assert_ne!(s, Secret::from("hunter2"));
    }

    #[test]
    fn a_vrrp_password_is_not_in_debug_output() {
        let auth = crate::vrrp::Auth::pass("hunter22");
        assert_eq!(format!("{auth:?}"), format!("Pass({REDACTED})"));
        assert_eq!(format!("{:?}", crate::vrrp::Auth::None), "None");
    }
}
