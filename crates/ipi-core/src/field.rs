//! Field errors in the shape the OpenShift installer prints them
//! (`platform.baremetal.apiVIPs[1]: Invalid value: "10.0.0.300": "10.0.0.300" is not a valid IP`),
//! so that an operator who knows the installer's messages recognises ours.

use std::fmt;

/// A path to a field of a document: `networking.machineNetwork[0].cidr`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct FieldPath(String);

impl FieldPath {
    /// The path of a top-level field.
    pub fn new(root: &str) -> Self {
        Self(root.to_owned())
    }

    /// The path of a child field of this one.
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Self::new(name)
        } else {
            Self(format!("{}.{name}", self.0))
        }
    }

    /// The path of an element of this list.
    pub fn index(&self, index: usize) -> Self {
        Self(format!("{}[{index}]", self.0))
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What was wrong with a field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    /// A field that must be given is missing or empty.
    Required,
    /// A field has a value that breaks a rule; the value as the user wrote it.
    Invalid(String),
    /// A list has more items than allowed: (given, allowed).
    TooMany(usize, usize),
}

/// One problem with one field: where, what kind, and a sentence saying what would be right.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldError {
    /// Which field.
    pub path: FieldPath,
    /// What kind of problem.
    pub kind: FieldErrorKind,
    /// The rule that was broken, in the installer's words where it has words for it.
    pub detail: String,
}

impl FieldError {
    /// A required field is missing.
    pub fn required(path: FieldPath, detail: impl Into<String>) -> Self {
        Self {
            path,
            kind: FieldErrorKind::Required,
            detail: detail.into(),
        }
    }

    /// A field holds a value (shown quoted, as the installer does) that breaks a rule.
    pub fn invalid(path: FieldPath, value: impl fmt::Display, detail: impl Into<String>) -> Self {
        Self {
            path,
            kind: FieldErrorKind::Invalid(quote(&value.to_string())),
            detail: detail.into(),
        }
    }

    /// A list field holds values that together break a rule; shown as Go prints a `[]string`.
    pub fn invalid_list<T: fmt::Display>(
        path: FieldPath,
        values: &[T],
        detail: impl Into<String>,
    ) -> Self {
        let items: Vec<String> = values.iter().map(|v| quote(&v.to_string())).collect();
        let shown = format!("[]string{{{}}}", items.join(", "));
        Self {
            path,
            kind: FieldErrorKind::Invalid(shown),
            detail: detail.into(),
        }
    }

    /// A list has more than `allowed` items.
    pub fn too_many(path: FieldPath, given: usize, allowed: usize) -> Self {
        Self {
            path,
            kind: FieldErrorKind::TooMany(given, allowed),
            detail: format!("must have at most {allowed} items"),
        }
    }
}

/// Quote a value the way Go's `%q` does for the printable strings we meet here.
fn quote(value: &str) -> String {
    format!("{value:?}")
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FieldErrorKind::Required => write!(f, "{}: Required value: {}", self.path, self.detail),
            FieldErrorKind::Invalid(value) => {
                write!(f, "{}: Invalid value: {value}: {}", self.path, self.detail)
            }
            FieldErrorKind::TooMany(given, _) => {
                write!(f, "{}: Too many: {given}: {}", self.path, self.detail)
            }
        }
    }
}

impl std::error::Error for FieldError {}

/// Every problem found in a document, in the order found; displayed one per line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldErrors(pub Vec<FieldError>);

impl FieldErrors {
    /// No problem was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Record a problem.
    pub fn push(&mut self, error: FieldError) {
        self.0.push(error);
    }

    /// `Ok(value)` when nothing was found, the errors otherwise.
    pub fn into_result<T>(self, value: T) -> Result<T, Self> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl fmt::Display for FieldErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for FieldErrors {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_the_installer() {
        let path = FieldPath::new("platform")
            .child("baremetal")
            .child("apiVIPs");
        let e = FieldError::invalid(
            path.index(1),
            "10.0.0.300",
            "\"10.0.0.300\" is not a valid IP",
        );
        assert_eq!(
            e.to_string(),
            r#"platform.baremetal.apiVIPs[1]: Invalid value: "10.0.0.300": "10.0.0.300" is not a valid IP"#
        );
        let e = FieldError::required(path.clone(), "must specify at least one VIP for the API");
        assert_eq!(
            e.to_string(),
            "platform.baremetal.apiVIPs: Required value: must specify at least one VIP for the API"
        );
        assert_eq!(
            FieldError::too_many(path.clone(), 3, 2).to_string(),
            "platform.baremetal.apiVIPs: Too many: 3: must have at most 2 items"
        );
        let e = FieldError::invalid_list(path, &["10.0.0.5", "10.0.0.6"], "x");
        assert_eq!(
            e.to_string(),
            r#"platform.baremetal.apiVIPs: Invalid value: []string{"10.0.0.5", "10.0.0.6"}: x"#
        );
    }
}
