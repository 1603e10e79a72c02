//! keepalived.conf's lines as keepalived 2.2 reads them (lib/parser.c, `read_line`), before
//! any block or meaning: comments (`#`, `!`; `\#` and `\!` stand for themselves), `@ID` and
//! `@^ID` conditional lines, `$NAME=VALUE` definitions (a trailing `\` continues one) and
//! `$NAME` / `${NAME}` substitution, `include GLOB` relative to the including file, and braces
//! as words of their own wherever they stand on a line (`authentication { auth_type PASS`).
//! Every line keeps its file and line number.

use std::collections::VecDeque;
use std::path::Path;

use super::error::{ConfigErrors, ConfigWarnings};
use super::glob;
use super::model::Location;

/// How deep includes may nest, which also stops include cycles.
const MAX_INCLUDE_DEPTH: usize = 8;

/// The longest a line may grow by substitution (keepalived's MAXBUF is 1024 bytes; it stops
/// substituting there, and so do we, with an error).
const MAX_LINE: usize = 8192;

/// Substitutions on one line at most: `$A=$A` would otherwise never end.
const MAX_SUBSTITUTIONS: usize = 256;

/// What keepalived takes from its command line that changes how a file reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexOptions {
    /// The configuration id that `@ID` lines are compared with (keepalived's `-i`, vrrpd's
    /// `--config-id`; by default the host name up to its first dot, as keepalived's).
    pub config_id: String,
}

impl LexOptions {
    /// The options with this configuration id, or keepalived's default (the short host name).
    pub fn with_id(config_id: Option<&str>) -> Self {
        match config_id {
            Some(id) => LexOptions {
                config_id: id.to_string(),
            },
            None => LexOptions::default(),
        }
    }
}

impl Default for LexOptions {
    fn default() -> Self {
        LexOptions {
            config_id: short_hostname(),
        }
    }
}

/// The host name up to its first dot (keepalived's default config id).
pub fn short_hostname() -> String {
    let name = nix::unistd::gethostname()
        .ok()
        .and_then(|n| n.into_string().ok())
        .unwrap_or_default();
    name.split('.').next().unwrap_or_default().to_string()
}

/// One word of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// Its text, quotes removed.
    pub text: String,
    /// Whether it was quoted (a quoted `{` is not a brace).
    pub quoted: bool,
}

impl Word {
    /// Whether this is the brace `brace` (`{` or `}`) rather than a quoted one.
    pub fn is(&self, brace: &str) -> bool {
        !self.quoted && self.text == brace
    }
}

/// A line's words with its place; a brace is always a line of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The words (never empty).
    pub words: Vec<Word>,
    /// Where the line was written.
    pub location: Location,
}

/// Why a line cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LexError {
    /// A `"` without its closing `"` on the same line (keepalived's strings do not span lines).
    #[error("a quoted string is not closed on its line")]
    UnclosedQuote,
    /// Substitution made the line too long or never ended.
    #[error("`$` substitution does not end (a definition that names itself?) or makes the line longer than {MAX_LINE} bytes")]
    Substitution,
}

/// The most an included file may hold: far more than any keepalived.conf (10,000 instances
/// are about 2 MiB), and a bound on what a "regular" file such as /proc/self/pagemap gives.
const MAX_INCLUDE: u64 = 64 << 20;

/// An included file's text, at most [`MAX_INCLUDE`] bytes.
fn read_bounded(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_INCLUDE + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_INCLUDE {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_INCLUDE} bytes"
        )));
    }
    Ok(text)
}

/// A `$NAME=VALUE` definition: its lines (more than one when continued with `\`).
#[derive(Debug, Clone)]
struct Definition {
    name: String,
    lines: Vec<String>,
}

/// The reader's state across files: definitions stay from where they are written to the end.
struct Lexer<'a> {
    options: &'a LexOptions,
    definitions: Vec<Definition>,
    /// A definition being continued by `\` lines.
    continuing: Option<usize>,
    out: Vec<Line>,
    errors: &'a mut ConfigErrors,
    warnings: &'a mut ConfigWarnings,
}

/// Reads `text` (from `origin`, whose directory anchors relative includes) into lines.
/// Errors and warnings are collected; what could be read is returned.
pub fn lines(
    text: &str,
    origin: &str,
    options: &LexOptions,
    errors: &mut ConfigErrors,
    warnings: &mut ConfigWarnings,
) -> Vec<Line> {
    let mut lexer = Lexer {
        options,
        definitions: Vec::new(),
        continuing: None,
        out: Vec::new(),
        errors,
        warnings,
    };
    lexer.file(text, origin, 0);
    lexer.out
}

impl Lexer<'_> {
    fn file(&mut self, text: &str, origin: &str, depth: usize) {
        for (n, raw) in text.lines().enumerate() {
            let location = Location::new(origin, n + 1);
            let (line, continued) = decomment(raw);
            if let Some(d) = self.continuing {
                // An empty line ends a continued definition; a comment alone does not.
                if raw.trim_end_matches(['\r', '\n']).is_empty() {
                    self.continuing = None;
                } else if !line.is_empty() {
                    self.continue_definition(d, &line, continued);
                }
                continue;
            }
            let mut pending = VecDeque::from([line]);
            // A multi-line definition that names itself on one of its lines would put that
            // line back for ever: the lines one line expands to are bounded too.
            let mut expanded = 0;
            while let Some(line) = pending.pop_front() {
                expanded += 1;
                if expanded > MAX_SUBSTITUTIONS {
                    self.errors
                        .push(&location, LexError::Substitution.to_string());
                    break;
                }
                self.line(line, &location, depth, &mut pending);
            }
        }
        self.continuing = None;
    }

    /// A line of a definition continued with `\`: blank lines are left out, and a line
    /// without `\` is its last.
    fn continue_definition(&mut self, d: usize, line: &str, continued: bool) {
        let text = if continued {
            line.trim_end_matches('\\').trim_end_matches([' ', '\t'])
        } else {
            self.continuing = None;
            line
        };
        if !text.is_empty() {
            self.definitions[d].lines.push(text.to_string());
        }
    }

    /// One line after its comments are gone: `@ID`, a definition, substitution, include,
    /// braces. Lines a multi-line definition expands to go to `pending`.
    fn line(
        &mut self,
        mut line: String,
        location: &Location,
        depth: usize,
        pending: &mut VecDeque<String>,
    ) {
        let mut rounds = 0;
        loop {
            if line.is_empty() {
                return;
            }
            match conditional(&line, &self.options.config_id) {
                Conditional::Drop => return,
                Conditional::Keep(rest) => line = rest,
            }
            if self.definition(&line) {
                return;
            }
            rounds += 1;
            match self.substitute(&line, location, pending) {
                Ok(None) => break,
                Ok(Some(new)) if rounds < MAX_SUBSTITUTIONS => {
                    line = decomment(&new).0;
                    if !line.starts_with('@') && !line.contains('$') {
                        break;
                    }
                }
                Ok(Some(_)) | Err(_) => {
                    self.errors
                        .push(location, LexError::Substitution.to_string());
                    return;
                }
            }
        }
        for segment in braces(&line) {
            if let Some((kind, pattern)) = include(&segment) {
                self.include(kind, pattern, location, depth);
                continue;
            }
            match split_words(&segment) {
                Ok(words) if words.is_empty() => {}
                Ok(words) => self.out.push(Line {
                    words,
                    location: location.clone(),
                }),
                Err(e) => self.errors.push(location, e.to_string()),
            }
        }
    }

    /// `$NAME=VALUE` (blanks allowed before `=`): recorded, true. A value ending in `\`
    /// continues on the next lines.
    fn definition(&mut self, line: &str) -> bool {
        let Some(rest) = line.strip_prefix('$') else {
            return false;
        };
        let name_len = name_length(rest);
        if name_len == 0 {
            return false;
        }
        let (name, after) = rest.split_at(name_len);
        let Some(value) = after.trim_start_matches([' ', '\t']).strip_prefix('=') else {
            return false;
        };
        let value = value.trim_start_matches([' ', '\t']);
        let (value, continued) = match value.strip_suffix('\\') {
            // `\\` is an escaped backslash, not a continuation.
            Some(v) if !v.ends_with('\\') => (v.trim_end_matches([' ', '\t']), true),
            _ => (value, false),
        };
        let lines = if value.is_empty() {
            Vec::new()
        } else {
            vec![value.to_string()]
        };
        let at = match self.definitions.iter().position(|d| d.name == name) {
            Some(at) => {
                self.definitions[at].lines = lines;
                at
            }
            None => {
                self.definitions.push(Definition {
                    name: name.to_string(),
                    lines,
                });
                self.definitions.len() - 1
            }
        };
        self.continuing = continued.then_some(at);
        true
    }

    /// One round of keepalived's `replace_param`: every `$NAME` and `${NAME}` of a known
    /// definition replaced, left to right, the replacement scanned again. `None`: nothing
    /// known. A multi-line definition, last on its line, puts its further lines in `pending`.
    fn substitute(
        &self,
        line: &str,
        location: &Location,
        pending: &mut VecDeque<String>,
    ) -> Result<Option<String>, LexError> {
        let mut text = line.to_string();
        let (mut from, mut count, mut found) = (0, 0, false);
        while let Some(offset) = text[from..].find('$') {
            let at = from + offset;
            let last = |len| at + len == text.len();
            let Some((len, def)) = self
                .reference(&text[at..], location)
                .filter(|(len, d)| d.lines.len() < 2 || last(*len))
            else {
                from = at + 1;
                continue;
            };
            // A multi-line definition (only expanded last on a line, as keepalived's): its
            // further lines follow this one.
            for (i, more) in def.lines.iter().skip(1).enumerate() {
                pending.insert(i, more.clone());
            }
            let value = def.lines.first().cloned().unwrap_or_default();
            text.replace_range(at..at + len, &value);
            found = true;
            count += 1;
            if count > MAX_SUBSTITUTIONS || text.len() > MAX_LINE {
                return Err(LexError::Substitution);
            }
            from = at;
        }
        Ok(found.then_some(text))
    }

    /// The definition `text` (starting at `$`) names and how long the reference is:
    /// `$NAME` ends at a blank, `,`, `)` or the end of the line; `${NAME}` at its `}`.
    fn reference(&self, text: &str, location: &Location) -> Option<(usize, Definition)> {
        let rest = &text[1..];
        let (braced, name_at) = match rest.strip_prefix('{') {
            Some(_) => (true, 2),
            None => (false, 1),
        };
        let len = name_length(&text[name_at..]);
        if len == 0 {
            return None;
        }
        let name = &text[name_at..name_at + len];
        let after = &text[name_at + len..];
        let total = if braced {
            after.starts_with('}').then_some(name_at + len + 1)?
        } else if after.is_empty() || after.starts_with([' ', '\t', ',', ')']) {
            name_at + len
        } else {
            return None;
        };
        self.known(name, location).map(|d| (total, d))
    }

    /// A definition by name, keepalived's standard ones included.
    fn known(&self, name: &str, location: &Location) -> Option<Definition> {
        if let Some(d) = self.definitions.iter().find(|d| d.name == name) {
            return Some(d.clone());
        }
        let value = match name {
            "_HASH" => "#".to_string(),
            "_BANG" => "!".to_string(),
            "_INSTANCE" => self.options.config_id.clone(),
            // keepalived reads a file from its directory.
            "_PWD" => directory(&location.file),
            _ => return None,
        };
        Some(Definition {
            name: name.to_string(),
            lines: vec![value],
        })
    }

    fn include(&mut self, kind: Include, pattern: &str, location: &Location, depth: usize) {
        if pattern.is_empty() {
            self.errors
                .push(location, "`include` takes one file name or glob");
            return;
        }
        if depth >= MAX_INCLUDE_DEPTH {
            self.errors.push(
                location,
                format!(
                    "`include {pattern}`: includes nest deeper than {MAX_INCLUDE_DEPTH} (an include cycle?)"
                ),
            );
            return;
        }
        let base = Path::new(&location.file).parent().unwrap_or(Path::new(""));
        let anchored = if Path::new(pattern).is_absolute() || location.file == "-" {
            pattern.to_string()
        } else {
            base.join(pattern).display().to_string()
        };
        let files = glob::glob(&anchored);
        if files.is_empty() {
            let message = format!("`include {pattern}`: no file matches");
            if kind == Include::Required {
                self.errors.push(location, message);
            } else {
                // keepalived logs it and reads on (unless --include-check says otherwise).
                self.warnings.push(location, message);
            }
        }
        for file in files {
            // Only regular files: `include /dev/zero` must not read forever.
            if !std::fs::metadata(&file).is_ok_and(|m| m.is_file()) {
                self.errors.push(
                    location,
                    format!("`include {}`: not a regular file", file.display()),
                );
                continue;
            }
            match read_bounded(&file) {
                Ok(text) => self.file(&text, &file.display().to_string(), depth + 1),
                Err(e) => self
                    .errors
                    .push(location, format!("`include {}`: {e}", file.display())),
            }
        }
    }
}

/// How many leading characters of `text` make a definition's name: a letter or `_`, then
/// letters, digits and `_`; 0 when it does not start like one.
fn name_length(text: &str) -> usize {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return 0,
    }
    1 + chars
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .count()
}

/// The directory a file is read from, absolute (`_PWD`).
fn directory(file: &str) -> String {
    let parent = Path::new(file).parent().unwrap_or(Path::new(""));
    let dir = if parent.as_os_str().is_empty() {
        std::env::current_dir().unwrap_or_default()
    } else {
        std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf())
    };
    dir.display().to_string()
}

/// What an `@` line leaves.
enum Conditional {
    /// The line, without its `@ID ` when it had one that matched.
    Keep(String),
    /// Not for this configuration id (or nothing after the id).
    Drop,
}

/// `@ID rest`: kept (as `rest`) only when ID is the configuration id; `@^ID rest` only when
/// it is not.
fn conditional(line: &str, config_id: &str) -> Conditional {
    let Some(rest) = line.strip_prefix('@') else {
        return Conditional::Keep(line.to_string());
    };
    let (reverse, rest) = match rest.strip_prefix('^') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let Some((id, after)) = rest.split_once([' ', '\t']) else {
        return Conditional::Drop;
    };
    if (id == config_id) == reverse {
        return Conditional::Drop;
    }
    Conditional::Keep(after.trim_start_matches([' ', '\t']).to_string())
}

/// keepalived's `decomment`: the line without leading and trailing blanks and without its
/// comment (`#` or `!` outside `"..."`); `\#` and `\!` outside quotes stand for themselves.
/// True when the line ends with a lone `\` (kept, after the blanks before it are gone: a
/// definition continues on the next line).
pub fn decomment(raw: &str) -> (String, bool) {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.trim_start_matches([' ', '\t']).chars().peekable();
    let (mut quote, mut continued) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quote = !quote;
                out.push(c);
            }
            '\\' => match chars.next() {
                Some(n @ ('#' | '!')) if !quote => out.push(n),
                Some(n) => {
                    out.push(c);
                    out.push(n);
                }
                None => continued = true,
            },
            '#' | '!' if !quote => break,
            _ => out.push(c),
        }
    }
    let trimmed = out.trim_end_matches([' ', '\t', '\r', '\n']).len();
    out.truncate(trimmed);
    if continued {
        // Kept, as keepalived keeps it: only a definition reads it as a continuation.
        out.push('\\');
    }
    (out, continued)
}

/// The line cut before and after every `{` and `}` outside quotes: keepalived reads each
/// brace as a line of its own.
fn braces(line: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let (mut quote, mut escaped) = (false, false);
    for c in line.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quote => escaped = true,
            '"' => quote = !quote,
            '{' | '}' if !quote => {
                segments.push(std::mem::take(&mut current));
                segments.push(c.to_string());
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    segments.push(current);
    segments
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether a missing include is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Include {
    /// `include`: keepalived logs a pattern that matches nothing and reads on.
    Lenient,
    /// `includer`, `includem`, `includew`, `includeb`, `includea`: keepalived's checked
    /// forms, where nothing matching is an error.
    Required,
}

/// `include PATTERN` (the rest of the line is the pattern, blanks and all, as keepalived's),
/// or one of the checked forms.
fn include(segment: &str) -> Option<(Include, &str)> {
    let rest = segment.strip_prefix("include")?;
    let mut chars = rest.chars();
    let (kind, pattern) = match chars.next()? {
        c if c.is_whitespace() => (Include::Lenient, chars.as_str()),
        'r' | 'm' | 'w' | 'b' | 'a' if chars.next().is_some_and(char::is_whitespace) => {
            (Include::Required, chars.as_str())
        }
        _ => return None,
    };
    Some((kind, pattern.trim()))
}

/// Splits one line (comments gone, braces apart) into words: `"..."` is one word (a
/// backslash escapes the next character inside it, as keepalived's script lines), anything
/// else ends at a blank or a `"`.
pub fn split_words(line: &str) -> Result<Vec<Word>, LexError> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut text = String::new();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => text.extend(chars.next()),
                    Some(c) => text.push(c),
                    None => return Err(LexError::UnclosedQuote),
                }
            }
            words.push(Word { text, quoted: true });
        } else {
            let mut text = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || c == '"' {
                    break;
                }
                text.push(c);
                chars.next();
            }
            words.push(Word {
                text,
                quoted: false,
            });
        }
    }
    Ok(words)
}

#[cfg(test)]
#[path = "lexer/tests.rs"]
mod tests;
