//! keepalived.conf's syntax, before any meaning: lines of words, `#` and `!` comments, quoted
//! strings, `{ }` blocks (opened at the end of a line or on the next one), and `include GLOB`
//! resolved relative to the including file.

use std::path::{Path, PathBuf};

use super::error::ConfigErrors;
use super::model::Location;

/// How deep includes may nest (keepalived allows 8 too), which also stops include cycles.
const MAX_INCLUDE_DEPTH: usize = 8;

/// One word of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// Its text, quotes removed.
    pub text: String,
    /// Whether it was quoted (a quoted `{` is not a brace).
    pub quoted: bool,
}

/// A statement: a keyword, its arguments, and the block that follows it, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The keyword.
    pub keyword: String,
    /// The words after it on its line.
    pub args: Vec<String>,
    /// The statements of its `{ }` block.
    pub block: Option<Vec<Node>>,
    /// Where the keyword is.
    pub location: Location,
}

/// A `"` without its closing `"` on the same line (keepalived's strings do not span lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a quoted string is not closed on its line")]
pub struct UnclosedQuote;

/// A line's words with its place.
#[derive(Debug, Clone)]
struct Line {
    words: Vec<Word>,
    location: Location,
}

/// Reads `text` (from `origin`, whose directory anchors relative includes) into statements.
/// Errors are collected in `errors`; what could be read is returned.
pub fn parse(text: &str, origin: &str, errors: &mut ConfigErrors) -> Vec<Node> {
    let mut lines = Vec::new();
    read_lines(text, origin, 0, &mut lines, errors);
    let mut at = 0;
    statements(&lines, &mut at, false, errors)
}

/// Splits one line into words; keepalived's rules: `#` or `!` outside quotes starts a comment,
/// `"..."` is one word (a backslash escapes the next character inside it), braces are words of
/// their own.
pub fn split_words(line: &str) -> Result<Vec<Word>, UnclosedQuote> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '#' || c == '!' {
            break;
        } else if c == '{' || c == '}' {
            chars.next();
            words.push(Word {
                text: c.to_string(),
                quoted: false,
            });
        } else if c == '"' {
            chars.next();
            let mut text = String::new();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => text.extend(chars.next()),
                    Some(c) => text.push(c),
                    None => return Err(UnclosedQuote),
                }
            }
            words.push(Word { text, quoted: true });
        } else {
            let mut text = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || matches!(c, '{' | '}' | '#' | '!' | '"') {
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

fn read_lines(
    text: &str,
    origin: &str,
    depth: usize,
    out: &mut Vec<Line>,
    errors: &mut ConfigErrors,
) {
    for (n, raw) in text.lines().enumerate() {
        let location = Location {
            file: origin.to_string(),
            line: n + 1,
        };
        let words = match split_words(raw) {
            Ok(words) => words,
            Err(e) => {
                errors.push(&location, e.to_string());
                continue;
            }
        };
        if words
            .first()
            .is_some_and(|w| !w.quoted && w.text == "include")
        {
            include(&words[1..], &location, depth, out, errors);
        } else if !words.is_empty() {
            out.push(Line { words, location });
        }
    }
}

fn include(
    args: &[Word],
    location: &Location,
    depth: usize,
    out: &mut Vec<Line>,
    errors: &mut ConfigErrors,
) {
    let [pattern] = args else {
        errors.push(location, "`include` takes one file name or glob");
        return;
    };
    if depth >= MAX_INCLUDE_DEPTH {
        errors.push(
            location,
            format!(
                "`include {}`: includes nest deeper than {MAX_INCLUDE_DEPTH} (an include cycle?)",
                pattern.text
            ),
        );
        return;
    }
    let base = Path::new(&location.file)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let pattern_path = if Path::new(&pattern.text).is_absolute() || location.file == "-" {
        PathBuf::from(&pattern.text)
    } else {
        base.join(&pattern.text)
    };
    let files = match glob(&pattern_path) {
        Ok(files) => files,
        Err(e) => {
            errors.push(location, format!("`include {}`: {e}", pattern.text));
            return;
        }
    };
    if files.is_empty() {
        errors.push(
            location,
            format!("`include {}`: no file matches", pattern.text),
        );
    }
    for file in files {
        // Only regular files: `include /dev/zero` must not read forever.
        if !std::fs::metadata(&file).is_ok_and(|m| m.is_file()) {
            errors.push(
                location,
                format!("`include {}`: not a regular file", file.display()),
            );
            continue;
        }
        match std::fs::read_to_string(&file) {
            Ok(text) => read_lines(&text, &file.display().to_string(), depth + 1, out, errors),
            Err(e) => errors.push(location, format!("`include {}`: {e}", file.display())),
        }
    }
}

/// The files matching a path whose last component may hold `*` and `?` (sorted, as glob(3)).
fn glob(pattern: &Path) -> Result<Vec<PathBuf>, std::io::Error> {
    let name = pattern
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains(['*', '?']) {
        return Ok(if pattern.exists() {
            vec![pattern.to_path_buf()]
        } else {
            Vec::new()
        });
    }
    let dir = pattern.parent().unwrap_or(Path::new("."));
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| wildcard(&name, &e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    files.sort();
    Ok(files)
}

/// `*` and `?` matching.
fn wildcard(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn is(word: Option<&Word>, brace: &str) -> bool {
    word.is_some_and(|w| !w.quoted && w.text == brace)
}

/// Statements until the end of input or, inside a block, its closing brace.
fn statements(
    lines: &[Line],
    at: &mut usize,
    in_block: bool,
    errors: &mut ConfigErrors,
) -> Vec<Node> {
    let mut nodes = Vec::new();
    while let Some(line) = lines.get(*at) {
        *at += 1;
        let mut words: &[Word] = &line.words;
        if is(words.first(), "}") {
            if in_block {
                if words.len() > 1 {
                    errors.push(&line.location, "nothing may follow `}` on its line");
                }
                return nodes;
            }
            errors.push(&line.location, "`}` closes no block");
            continue;
        }
        if is(words.first(), "{") {
            errors.push(&line.location, "`{` opens a block that no keyword names");
            words = &words[1..];
            if words.is_empty() {
                continue;
            }
        }
        nodes.push(statement(words, &line.location, lines, at, errors));
    }
    if in_block {
        let end = lines.last().map(|l| l.location.clone()).unwrap_or_default();
        errors.push(
            &end,
            "a block is not closed: `}` missing at the end of the file",
        );
    }
    nodes
}

/// One statement starting at `words` (the rest of its line); reads its block if it has one.
fn statement(
    words: &[Word],
    location: &Location,
    lines: &[Line],
    at: &mut usize,
    errors: &mut ConfigErrors,
) -> Node {
    let keyword = words[0].text.clone();
    let rest = &words[1..];
    let open = rest.iter().position(|w| is(Some(w), "{"));
    let args_end = open.unwrap_or(rest.len());
    let args: Vec<String> = rest[..args_end].iter().map(|w| w.text.clone()).collect();
    let mut node = Node {
        keyword,
        args,
        block: None,
        location: location.clone(),
    };
    if let Some(open) = open {
        // `keyword {` ... or a whole block on one line: `keyword { a b }`.
        let inner = &rest[open + 1..];
        if let Some(close) = inner.iter().position(|w| is(Some(w), "}")) {
            node.block = Some(one_line_block(&inner[..close], location));
            if close + 1 < inner.len() {
                errors.push(location, "nothing may follow `}` on its line");
            }
        } else {
            let mut children = Vec::new();
            if !inner.is_empty() {
                children.push(statement(inner, location, lines, at, errors));
            }
            children.extend(statements(lines, at, true, errors));
            node.block = Some(children);
        }
    } else if lines
        .get(*at)
        .is_some_and(|l| is(l.words.first(), "{") && l.words.len() == 1)
    {
        // The brace on the next line.
        *at += 1;
        node.block = Some(statements(lines, at, true, errors));
    }
    node
}

/// `{ ... }` on one line: one statement, as if it stood on a line of its own
/// (`track_script { chk weight 2 }`, `virtual_ipaddress { 192.0.2.1/32 }`).
fn one_line_block(words: &[Word], location: &Location) -> Vec<Node> {
    let Some((first, rest)) = words.split_first() else {
        return Vec::new();
    };
    vec![Node {
        keyword: first.text.clone(),
        args: rest.iter().map(|w| w.text.clone()).collect(),
        block: None,
        location: location.clone(),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> (Vec<Node>, String) {
        let mut errors = ConfigErrors::default();
        let nodes = parse(text, "k.conf", &mut errors);
        (nodes, errors.to_string())
    }

    #[test]
    fn words_quotes_comments_and_braces() {
        let words = split_words(r#"script "/bin/x \"a b\"" arg # comment"#).unwrap();
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(texts, ["script", r#"/bin/x "a b""#, "arg"]);
        assert!(words[1].quoted);
        let words = split_words("vrrp_instance X{! comment").unwrap();
        assert_eq!(words.len(), 3);
        assert!(split_words(r#"script "open"#).is_err());
    }

    #[test]
    fn blocks_open_on_the_line_or_the_next_and_nest() {
        let (nodes, errors) = tree(
            "global_defs\n{\n  router_id r1\n}\nvrrp_instance A {\n  authentication {\n    \
             auth_type PASS\n  }\n  track_script { chk_a weight 2 }\n}\n",
        );
        assert_eq!(errors, "");
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[0].block.as_ref().unwrap()[0].args, ["r1"]);
        let inst = nodes[1].block.as_ref().unwrap();
        assert_eq!(inst[0].keyword, "authentication");
        assert_eq!(inst[0].block.as_ref().unwrap()[0].args, ["PASS"]);
        let tracked = &inst[1].block.as_ref().unwrap()[0];
        assert_eq!(tracked.keyword, "chk_a");
        assert_eq!(tracked.args, ["weight", "2"]);
        assert_eq!(nodes[1].location.line, 5);
    }

    #[test]
    fn unbalanced_braces_are_reported_with_their_line() {
        let (_, errors) = tree("vrrp_instance A {\n  priority 1\n");
        assert!(
            errors.contains("k.conf:2: a block is not closed"),
            "{errors}"
        );
        let (_, errors) = tree("}\n");
        assert!(errors.contains("k.conf:1: `}` closes no block"), "{errors}");
    }

    #[test]
    fn includes_resolve_relative_to_the_including_file_and_cycles_stop() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("conf.d")).unwrap();
        std::fs::write(dir.path().join("conf.d/a.conf"), "vrrp_script a {\n}\n").unwrap();
        std::fs::write(dir.path().join("conf.d/b.conf"), "vrrp_script b {\n}\n").unwrap();
        std::fs::write(dir.path().join("loop.conf"), "include loop.conf\n").unwrap();
        let main = dir.path().join("main.conf");
        let mut errors = ConfigErrors::default();
        let nodes = parse(
            "include conf.d/*.conf\n",
            &main.display().to_string(),
            &mut errors,
        );
        assert_eq!(errors.to_string(), "");
        let names: Vec<&str> = nodes.iter().map(|n| n.args[0].as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let mut errors = ConfigErrors::default();
        parse(
            "include loop.conf\n",
            &main.display().to_string(),
            &mut errors,
        );
        assert!(
            errors.to_string().contains("nest deeper than 8"),
            "{errors}"
        );
        let mut errors = ConfigErrors::default();
        parse(
            "include nothing-*.conf\n",
            &main.display().to_string(),
            &mut errors,
        );
        assert!(errors
            .to_string()
            .contains("main.conf:1: `include nothing-*.conf`: no file matches"));
    }

    #[test]
    fn wildcards() {
        assert!(wildcard("*.conf", "a.conf"));
        assert!(wildcard("a?c", "abc"));
        assert!(!wildcard("*.conf", "a.conf.bak"));
        assert!(wildcard("*", ""));
    }
}
