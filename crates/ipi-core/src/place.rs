//! Places in configuration files and the errors found there: every program that reads a file
//! reports `FILE:LINE: message`, collects every problem rather than stopping at the first, and
//! prints them in the order found.

use std::fmt;

/// Where something was written: file and 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct Location {
    /// The file (`-` for standard input).
    pub file: String,
    /// The line, from 1; 0 for the file as a whole.
    pub line: usize,
}

impl Location {
    /// Line `line` of `file`.
    pub fn new(file: impl Into<String>, line: usize) -> Self {
        Location {
            file: file.into(),
            line,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}", self.file, self.line)
        }
    }
}

/// Every problem found in a file, in the order found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Errors(pub Vec<(Location, String)>);

impl Errors {
    /// Records a problem at `location`.
    pub fn push(&mut self, location: &Location, message: impl Into<String>) {
        self.0.push((location.clone(), message.into()));
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok(value)` when nothing was found, else the errors.
    pub fn into_result<T>(self, value: T) -> Result<T, Errors> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl fmt::Display for Errors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (location, message)) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{location}: {message}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Errors {}

/// YAML that could not be read: where, when the parser knows, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", at.map(|(l, c)| format!("{l}:{c}: ")).unwrap_or_default())]
pub struct YamlError {
    /// Line and column.
    pub at: Option<(usize, usize)>,
    /// The parser's message.
    pub message: String,
}

/// Reads YAML (of which JSON is a part) into `T`; the error reads `LINE:COLUMN: message` where
/// the parser knows the place (the caller puts the file's name in front).
pub fn yaml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    serde_norway::from_str(text).map_err(|e| YamlError {
        at: e.location().map(|l| (l.line(), l.column())),
        message: e.to_string(),
    })
}

/// Splits text into words as keepalived and haproxy do: blanks separate, single or double
/// quotes group, a backslash escapes the next character, and `comment` (outside quotes) ends
/// the line.
pub fn words(text: &str, comment: Option<char>) -> Result<Vec<String>, String> {
    words_with(text, comment, Escapes::Plain)
}

/// What a backslash means, and whether single quotes keep it as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escapes {
    /// The next character stands for itself, in and out of quotes.
    Plain,
    /// haproxy's: `\r`, `\n`, `\t` and `\xNN` stand for their bytes (`\xNN` as the character
    /// of that code), any other character for itself; inside single quotes nothing is
    /// escaped.
    Haproxy,
}

/// [`words`] with the backslash rules of `escapes`.
pub fn words_with(
    text: &str,
    comment: Option<char>,
    escapes: Escapes,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let (mut in_word, mut quote) = (false, None);
    let mut chars = text.chars();
    let literal = |q: Option<char>| escapes == Escapes::Haproxy && q == Some('\'');
    while let Some(c) = chars.next() {
        match (c, quote) {
            (c, Some(q)) if c == q => quote = None,
            ('\\', q) if !literal(q) => {
                word.extend(escape(&mut chars, escapes, text)?);
                in_word = true;
            }
            ('"' | '\'', None) => {
                quote = Some(c);
                in_word = true;
            }
            (c, None) if Some(c) == comment => break,
            (c, None) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (c, _) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(format!("an opening quote in `{text}` is not closed"));
    }
    if in_word {
        out.push(word);
    }
    Ok(out)
}

/// The character a backslash stands for, the backslash read (none for a lone backslash at
/// the end in [`Escapes::Plain`]).
fn escape(
    chars: &mut std::str::Chars<'_>,
    escapes: Escapes,
    text: &str,
) -> Result<Option<char>, String> {
    let next = chars.next();
    if escapes == Escapes::Plain {
        return Ok(next);
    }
    Ok(Some(match next {
        Some('r') => '\r',
        Some('n') => '\n',
        Some('t') => '\t',
        Some('x') => {
            let hex: String = chars.by_ref().take(2).collect();
            match u8::from_str_radix(&hex, 16) {
                Ok(b) if hex.len() == 2 => char::from(b),
                _ => {
                    return Err(format!(
                        "`\\x{hex}` in `{}` is not two hex digits",
                        text.trim()
                    ))
                }
            }
        }
        Some(c) => c,
        None => return Err(format!("`{}` ends with a lone backslash", text.trim())),
    }))
}

/// The text of a configuration file, or of standard input for `-`; an error names the file.
pub fn read(path: &std::path::Path) -> Result<String, Errors> {
    let origin = path.display().to_string();
    let text = if origin == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map(|_| text)
    } else {
        std::fs::read_to_string(path)
    };
    text.map_err(|e| {
        let mut errors = Errors::default();
        errors.push(&Location::new(origin, 0), format!("cannot read it: {e}"));
        errors
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_quotes_escapes_and_comments() {
        let w = words(r#"/bin/echo 'a b' "c d" e\ f # x"#, Some('#')).unwrap();
        assert_eq!(w, ["/bin/echo", "a b", "c d", "e f"]);
        assert_eq!(words("a#b", None).unwrap(), ["a#b"]);
        assert_eq!(words(r#""" x"#, None).unwrap(), ["", "x"]);
        assert!(words("'open", None).is_err());
    }

    #[test]
    fn every_error_with_its_place() {
        let mut e = Errors::default();
        assert!(e.is_empty());
        e.push(&Location::new("a.conf", 3), "bad");
        e.push(&Location::new("a.conf", 0), "unreadable");
        assert_eq!(e.to_string(), "a.conf:3: bad\na.conf: unreadable");
        assert!(e.into_result(()).is_err());
    }
}
