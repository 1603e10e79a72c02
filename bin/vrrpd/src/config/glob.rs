//! The file names an `include` pattern matches, as glob(3) with keepalived's flags
//! (`GLOB_BRACE`): `*`, `?`, `[...]` in any component, `{a,b}` alternatives, `\` escaping the
//! next character. Each alternative's matches are sorted, alternatives in the order written.
//! Names starting with `.` match only a pattern that starts with `.`.

use std::path::{Path, PathBuf};

/// How many alternatives `{...}` may expand to (a pattern is a line of a file, not a bomb).
const MAX_ALTERNATIVES: usize = 256;

/// The existing paths `pattern` matches (none: an empty list).
pub fn glob(pattern: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for alternative in alternatives(pattern) {
        let mut found = walk(&alternative);
        found.sort();
        for path in found {
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// `a{b,c}d` as `abd`, `acd` (nested braces too); a pattern without a complete `{...,...}`
/// as itself.
fn alternatives(pattern: &str) -> Vec<String> {
    let mut done = Vec::new();
    let mut todo = vec![pattern.to_string()];
    while let Some(p) = todo.pop() {
        match brace(&p) {
            Some((open, commas, close)) if done.len() + todo.len() < MAX_ALTERNATIVES => {
                let mut starts = vec![open + 1];
                starts.extend(commas.iter().map(|c| c + 1));
                let mut ends = commas.clone();
                ends.push(close);
                for (s, e) in starts.into_iter().zip(ends).rev() {
                    todo.push(format!("{}{}{}", &p[..open], &p[s..e], &p[close + 1..]));
                }
            }
            _ => done.push(p),
        }
    }
    done
}

/// The first `{` with a matching `}` and at least one `,` at its level: where they are.
fn brace(p: &str) -> Option<(usize, Vec<usize>, usize)> {
    let bytes = p.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'{' => {
                if let Some(found) = brace_at(bytes, i) {
                    return Some(found);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn brace_at(bytes: &[u8], open: usize) -> Option<(usize, Vec<usize>, usize)> {
    let (mut depth, mut commas, mut i) = (0usize, Vec::new(), open + 1);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'{' => depth += 1,
            b'}' if depth == 0 => return (!commas.is_empty()).then_some((open, commas, i)),
            b'}' => depth -= 1,
            b',' if depth == 0 => commas.push(i),
            _ => {}
        }
        i += 1;
    }
    None
}

fn has_wildcard(component: &str) -> bool {
    component.contains(['*', '?', '['])
}

/// The paths matching a pattern without braces, component by component.
fn walk(pattern: &str) -> Vec<PathBuf> {
    let root = if pattern.starts_with('/') {
        PathBuf::from("/")
    } else {
        PathBuf::new()
    };
    let mut paths = vec![root];
    for component in pattern.split('/').filter(|c| !c.is_empty()) {
        let mut next = Vec::new();
        for dir in &paths {
            if has_wildcard(component) {
                next.extend(matching(dir, component));
            } else {
                next.push(dir.join(unescape(component)));
            }
        }
        paths = next;
        if paths.is_empty() {
            break;
        }
    }
    paths.retain(|p| !p.as_os_str().is_empty() && p.exists());
    paths
}

fn matching(dir: &Path, component: &str) -> Vec<PathBuf> {
    let listed = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(listed) else {
        return Vec::new();
    };
    let pattern: Vec<char> = component.chars().collect();
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.') || component.starts_with('.'))
        .filter(|name| matches(&pattern, &name.chars().collect::<Vec<_>>()))
        .map(|name| dir.join(name))
        .collect()
}

fn unescape(component: &str) -> String {
    let mut out = String::new();
    let mut chars = component.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

/// fnmatch(3) without flags: `*`, `?`, `[...]` (`!` or `^` negates, `a-z` ranges) and `\`.
/// The star backtracks to its last position only, so a match takes linear steps per star.
pub fn matches(pattern: &[char], name: &[char]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match step(pattern, p, name[n]) {
            Step::Star => {
                star = Some((p + 1, n));
                p += 1;
                continue;
            }
            Step::Matched(next) => {
                p = next;
                n += 1;
                continue;
            }
            Step::Failed => {}
        }
        match star {
            Some((sp, sn)) => {
                p = sp;
                n = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

enum Step {
    Star,
    Matched(usize),
    Failed,
}

/// Whether the pattern at `p` takes `c`, and where the pattern goes on.
fn step(pattern: &[char], p: usize, c: char) -> Step {
    match pattern.get(p) {
        None => Step::Failed,
        Some('*') => Step::Star,
        Some('?') => Step::Matched(p + 1),
        Some('\\') => match pattern.get(p + 1) {
            Some(&e) if e == c => Step::Matched(p + 2),
            _ => Step::Failed,
        },
        Some('[') => match class(pattern, p, c) {
            Some((true, next)) => Step::Matched(next),
            Some((false, _)) => Step::Failed,
            // No closing `]`: a plain `[`.
            None if c == '[' => Step::Matched(p + 1),
            None => Step::Failed,
        },
        Some(&l) if l == c => Step::Matched(p + 1),
        Some(_) => Step::Failed,
    }
}

/// A `[...]` class at `p`: whether `c` is in it and where it ends; `None` when not closed.
fn class(pattern: &[char], p: usize, c: char) -> Option<(bool, usize)> {
    let mut i = p + 1;
    let negate = matches!(pattern.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let (mut found, mut first) = (false, true);
    loop {
        let &l = pattern.get(i)?;
        if l == ']' && !first {
            return Some((found != negate, i + 1));
        }
        first = false;
        if pattern.get(i + 1) == Some(&'-') && pattern.get(i + 2).is_some_and(|&h| h != ']') {
            let h = pattern[i + 2];
            found |= (l..=h).contains(&c);
            i += 3;
        } else {
            found |= l == c;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, n: &str) -> bool {
        matches(
            &p.chars().collect::<Vec<_>>(),
            &n.chars().collect::<Vec<_>>(),
        )
    }

    #[test]
    fn wildcards_and_classes() {
        assert!(m("*.conf", "a.conf"));
        assert!(m("a?c", "abc"));
        assert!(!m("*.conf", "a.conf.bak"));
        assert!(m("*", ""));
        assert!(m("[ab]*.conf", "b1.conf"));
        assert!(!m("[!ab]*", "a1"));
        assert!(m("[0-9][0-9]-*", "10-vip.conf"));
        assert!(m(r"a\*", "a*"));
        assert!(!m(r"a\*", "ab"));
        assert!(m("*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaab"));
    }

    #[test]
    fn braces_expand_in_order() {
        assert_eq!(alternatives("x{a,b{c,d}}y"), ["xay", "xbcy", "xbdy"]);
        assert_eq!(alternatives("x{a}y"), ["x{a}y"]);
    }

    #[test]
    fn every_component_may_hold_wildcards() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "d1/a.conf",
            "d1/b.conf",
            "d2/c.conf",
            "d2/.h.conf",
            "e/x.conf",
        ] {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        let base = dir.path().display();
        let names = |p: String| -> Vec<String> {
            glob(&p)
                .iter()
                .map(|f| f.strip_prefix(dir.path()).unwrap().display().to_string())
                .collect()
        };
        assert_eq!(
            names(format!("{base}/d*/*.conf")),
            ["d1/a.conf", "d1/b.conf", "d2/c.conf"]
        );
        assert_eq!(
            names(format!("{base}/{{e,d2}}/*.conf")),
            ["e/x.conf", "d2/c.conf"]
        );
        assert!(names(format!("{base}/none/*.conf")).is_empty());
        assert_eq!(names(format!("{base}/d1/a.conf")), ["d1/a.conf"]);
    }
}
