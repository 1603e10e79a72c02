//! The house rules of docs/ARCHITECTURE.md that a reader of the code can check, checked on every
//! crate of the workspace: no import cycle between the modules of a crate, nor between a module
//! and a child that takes a name the parent defines; no module longer than a reader can hold
//! ([`MAX_MODULE_LINES`]), nor a function ([`MAX_FUNCTION_LINES`]); no module below `cli` and
//! `commands` that imports the command-line types; every program's `main.rs` wiring only; and no
//! program (a package under `bin/`) that depends on another program.
//!
//! Modules are read as text: `crate::`, `super::` and `self::` paths (in `use` trees and in code)
//! are resolved against the crate's module files. Test modules (`#[cfg(test)]`) are left out:
//! they may reach anywhere. Manifests are read as text too, for their `[dependencies]` (what a
//! program links; dev-dependencies, for its tests, may reach anywhere).

// Helpers outside #[test] functions too: in a test, a failed expect is a failed test.
#![allow(clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace root (`HOUSE_ROOT` checks another checkout, e.g. an older commit's).
fn root() -> PathBuf {
    if let Some(other) = std::env::var_os("HOUSE_ROOT") {
        return PathBuf::from(other);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace")
        .to_path_buf()
}

/// Every library crate's `src` directory (the programs' `lib.rs`, ipi-core, ipi-lab, tests).
fn crates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for parent in ["bin", "crates"] {
        let dir = root().join(parent);
        for entry in std::fs::read_dir(&dir).expect("read the workspace") {
            let src = entry.expect("a directory entry").path().join("src");
            if src.join("lib.rs").exists() {
                out.push(src);
            }
        }
    }
    out.push(root().join("tests/src"));
    out.sort();
    out
}

/// A module's path below its crate root (`[]` is the root, `["daemon", "table"]` daemon/table.rs).
type ModPath = Vec<String>;

/// The module files of a crate: path -> source without comments and test modules.
fn modules(src: &Path) -> BTreeMap<ModPath, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read a source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "bin") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("main.rs") {
                continue;
            }
            let relative = path.strip_prefix(src).expect("below src");
            let mut parts: ModPath = relative
                .iter()
                .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
                parts.pop();
            }
            let text = std::fs::read_to_string(&path).expect("read a module");
            out.insert(parts, without_tests(&without_comments(&text)));
        }
    }
    out
}

fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.trim_start().starts_with("//") {
            true => "",
            false => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text before the first `#[cfg(test)]`: test modules close the file in this project.
fn without_tests(text: &str) -> String {
    match text.find("#[cfg(test)]") {
        Some(at) => text[..at].to_string(),
        None => text.to_string(),
    }
}

/// Expands a `use` tree (`crate::{a::{b, c}, d as e}`) into its paths.
fn expand(tree: &str) -> Vec<String> {
    // `x as y` names x: drop the `as y` but keep the punctuation after y (`,`, `}`).
    let mut words = tree.split_whitespace();
    let mut tree = String::new();
    while let Some(w) = words.next() {
        match w {
            "as" => tree.extend(
                words
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .filter(|c| !c.is_alphanumeric() && *c != '_'),
            ),
            _ => tree.push_str(w),
        }
    }
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let close = tree.rfind('}').filter(|c| *c > open).unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(&format!("{prefix}{p}")))
        .collect()
}

/// The paths a module names: `use` trees expanded, and `crate::`/`super::`/`self::` in code.
fn named_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = line.trim_start();
        let Some(tree) = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| line.strip_prefix(p))
        else {
            continue;
        };
        let mut tree = tree.to_string();
        while !tree.contains(';') {
            match lines.next() {
                Some(more) => tree.push_str(more),
                None => break,
            }
        }
        out.extend(expand(tree.split(';').next().unwrap_or_default()));
    }
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')) {
        if ["crate::", "super::", "self::"]
            .iter()
            .any(|p| word.starts_with(p))
        {
            out.push(word.to_string());
        }
    }
    out
}

/// The module a path names from module `from`, if it names one of the crate's modules.
fn target(from: &ModPath, path: &str, known: &BTreeSet<ModPath>) -> Option<ModPath> {
    resolve(from, path, known).map(|(module, _)| module)
}

/// The deepest of the crate's modules a path from module `from` goes through, and the word
/// that follows it there (the name it takes from that module), if any.
fn resolve(
    from: &ModPath,
    path: &str,
    known: &BTreeSet<ModPath>,
) -> Option<(ModPath, Option<String>)> {
    let mut words = path.split("::").filter(|w| !w.is_empty()).peekable();
    let mut at: ModPath = match words.next()? {
        "crate" => Vec::new(),
        "self" => from.clone(),
        "super" => from[..from.len().checked_sub(1)?].to_vec(),
        _ => return None,
    };
    while words.next_if_eq(&"super").is_some() {
        at.pop()?;
    }
    let mut best = known.contains(&at).then(|| (at.clone(), None));
    for w in words {
        if let Some((_, name @ None)) = &mut best {
            *name = Some(w.to_string());
        }
        at.push(w.to_string());
        if known.contains(&at) {
            best = Some((at.clone(), None));
        }
    }
    best
}

/// The names a module's file defines at its top level (items, not `use` re-exports).
fn defined_names(text: &str) -> BTreeSet<String> {
    const KINDS: [&str; 8] = [
        "struct", "enum", "fn", "const", "static", "type", "trait", "union",
    ];
    let mut out = BTreeSet::new();
    for line in text.lines().filter(|l| !l.starts_with(char::is_whitespace)) {
        let mut words = line
            .split_whitespace()
            .skip_while(|w| w.starts_with("pub") || ["async", "unsafe"].contains(w))
            .peekable();
        // `const fn NAME`: the kind is `fn`.
        if words.peek() == Some(&"const") && line.contains("const fn ") {
            words.next();
        }
        let (Some(kind), Some(name)) = (words.next(), words.next()) else {
            continue;
        };
        let name: String = (name.chars())
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if KINDS.contains(&kind) && !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

/// Parent-child loops: a child module that takes a name its parent's own file defines, while the
/// parent takes something from that child. Each as (parent, child, the names).
fn parent_child_loops(src: &Path) -> Vec<(ModPath, String, BTreeSet<String>)> {
    let modules = modules(src);
    let known: BTreeSet<ModPath> = modules.keys().cloned().collect();
    let mut out = Vec::new();
    for (child, text) in &modules {
        let Some((last, parent)) = child.split_last() else {
            continue;
        };
        let defined = defined_names(&modules[parent]);
        let taken: BTreeSet<String> = named_paths(text)
            .iter()
            .filter_map(|path| resolve(child, path, &known))
            .filter_map(|(module, name)| (module == parent).then_some(name).flatten())
            .filter(|name| defined.contains(name))
            .collect();
        let parent_takes = modules[parent]
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .any(|w| {
                let w = w.strip_prefix("self::").unwrap_or(w);
                w.starts_with(&format!("{last}::"))
            });
        if !taken.is_empty() && parent_takes {
            out.push((parent.to_vec(), last.clone(), taken));
        }
    }
    out
}

/// Import edges between sibling modules: (parent, from child, to child).
fn edges(src: &Path) -> BTreeSet<(ModPath, String, String)> {
    let modules = modules(src);
    let known: BTreeSet<ModPath> = modules.keys().cloned().collect();
    let mut out = BTreeSet::new();
    for (from, text) in &modules {
        for path in named_paths(text) {
            let Some(to) = target(from, &path, &known) else {
                continue;
            };
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common < from.len() && common < to.len() {
                out.insert((
                    from[..common].to_vec(),
                    from[common].clone(),
                    to[common].clone(),
                ));
            }
        }
    }
    out
}

/// A cycle among one parent's children, if any: the modules on it, in order.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if !done.insert(node.to_string()) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let mut problems = Vec::new();
    for src in crates() {
        let mut graphs: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for (parent, from, to) in edges(&src) {
            graphs
                .entry(parent)
                .or_default()
                .entry(from)
                .or_default()
                .insert(to);
        }
        for (parent, graph) in graphs {
            if let Some(found) = cycle(&graph) {
                problems.push(format!(
                    "{}: below `crate::{}`: {}",
                    src.display(),
                    parent.join("::"),
                    found.join(" -> ")
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "import cycles:\n{}",
        problems.join("\n")
    );
}

#[test]
fn no_child_takes_a_name_its_parent_defines_while_the_parent_takes_from_it() {
    let mut problems = Vec::new();
    for src in crates() {
        for (parent, child, names) in parent_child_loops(&src) {
            problems.push(format!(
                "{}: `crate::{}` takes from its child `{child}`, which takes {names:?} from it \
                 (define them in a child the others take from, and re-export them if need be)",
                src.display(),
                parent.join("::"),
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "parent-child import loops:\n{}",
        problems.join("\n")
    );
}

/// The most lines a module's code (before its tests) may have: what a reader can hold.
const MAX_MODULE_LINES: usize = 800;

/// The modules of `src` whose code is longer than [`MAX_MODULE_LINES`], with their lengths.
fn long_modules(src: &Path) -> Vec<(ModPath, usize)> {
    (modules(src).into_iter())
        .map(|(module, text)| (module, text.lines().count()))
        .filter(|(_, lines)| *lines > MAX_MODULE_LINES)
        .collect()
}

#[test]
fn no_module_is_longer_than_a_reader_can_hold() {
    let mut problems = Vec::new();
    for src in crates() {
        for (module, lines) in long_modules(&src) {
            problems.push(format!(
                "{}: `crate::{}` has {lines} lines of code before its tests",
                src.display(),
                module.join("::")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "modules over {MAX_MODULE_LINES} lines (split them along the seams their own methods \
         draw):\n{}",
        problems.join("\n")
    );
}

/// The most lines a function of a library (before its tests) may have, its signature and
/// closing brace included.
const MAX_FUNCTION_LINES: usize = 80;

/// The functions of a module's code longer than [`MAX_FUNCTION_LINES`]: name, first line
/// (counted from one) and length. A function's body ends at the first `}` as indented as its
/// `fn` (rustfmt's layout); one without a body (a trait's) or on one line is not counted.
fn long_functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let words: Vec<&str> = trimmed
            .split_whitespace()
            .skip_while(|w| w.starts_with("pub") || ["async", "const", "unsafe"].contains(w))
            .take(2)
            .collect();
        let (["fn", name], false) = (
            words.as_slice(),
            trimmed.ends_with(';') || trimmed.ends_with('}'),
        ) else {
            i += 1;
            continue;
        };
        let indent = line.len() - trimmed.len();
        let end = (i + 1..lines.len()).find(|&j| {
            let l = lines[j];
            l.len() - l.trim_start().len() == indent && l.trim_start().starts_with('}')
        });
        // A declaration whose signature ends in `;` on a later line has no body.
        let declaration = (i..lines.len())
            .find(|&j| lines[j].trim_end().ends_with(';') || lines[j].trim_end().ends_with('{'))
            .is_some_and(|j| lines[j].trim_end().ends_with(';'));
        match end {
            Some(end) if !declaration => {
                let length = end - i + 1;
                if length > MAX_FUNCTION_LINES {
                    let name = name.split(['(', '<']).next().unwrap_or(name);
                    out.push((name.to_string(), i + 1, length));
                }
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    out
}

#[test]
fn no_library_function_is_longer_than_80_lines() {
    let mut problems = Vec::new();
    for src in crates() {
        for (module, text) in modules(&src) {
            for (name, line, length) in long_functions(&text) {
                problems.push(format!(
                    "{}: `crate::{}` fn {name} (line {line}): {length} lines",
                    src.display(),
                    module.join("::")
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines:\n{}",
        problems.join("\n")
    );
}

#[test]
fn only_cli_and_commands_know_the_command_line_types() {
    let mut problems = Vec::new();
    for src in crates() {
        let known: BTreeSet<ModPath> = modules(&src).keys().cloned().collect();
        for (from, text) in modules(&src) {
            let top = from.first().map(String::as_str);
            if matches!(top, None | Some("cli") | Some("commands")) {
                continue;
            }
            let uses_cli = named_paths(&text).iter().any(|p| {
                target(&from, p, &known).is_some_and(|t| t.first().is_some_and(|m| m == "cli"))
            });
            if uses_cli {
                problems.push(format!(
                    "{}: {} imports crate::cli",
                    src.display(),
                    from.join("/")
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_main_is_wiring_only() {
    let mut problems = Vec::new();
    for src in crates() {
        let main = src.join("main.rs");
        let Ok(text) = std::fs::read_to_string(&main) else {
            continue;
        };
        let functions = text.matches("\nfn ").count() + text.matches("\npub fn ").count();
        let code = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
            .count();
        // main, and at most one helper mapping an error to an exit status.
        if functions > 2 || code > 60 {
            problems.push(format!(
                "{}: {functions} functions, {code} lines of code: subcommand bodies belong in `commands`",
                main.display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The programs: each package under `bin/`, its directory and its name.
fn programs() -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("bin")).expect("read bin/") {
        let dir = entry.expect("a directory entry").path();
        let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        out.insert(package_name(&text).expect("a [package] name"), dir);
    }
    out
}

/// A manifest's lines without comments, trimmed.
fn manifest_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// The `name` of a manifest's `[package]`.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest_lines(manifest) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if let Some(("name", value)) = line.split_once('=').map(|(k, v)| (k.trim(), v)) {
            if in_package {
                return Some(value.trim().trim_matches('"').to_string());
            }
        }
    }
    None
}

/// The string value of `key = "..."` in an inline table or a line.
fn string_value(text: &str, key: &str) -> Option<String> {
    let mut rest = text;
    while let Some(at) = rest.find(key) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + key.len()..].trim_start();
        rest = &rest[at + key.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-') {
            continue;
        }
        if let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start().strip_prefix('"')?;
            return value.split('"').next().map(str::to_string);
        }
    }
    None
}

/// What a manifest's `[dependencies]` (and `[target.*.dependencies]`, and
/// `[dependencies.NAME]` tables) name: each dependency's package and its path, if given.
/// Dev- and build-dependencies are left out.
fn dependencies(manifest: &str) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    // Where we are: not in dependencies, in a [dependencies] list, or in one dependency's table.
    let mut list = false;
    let mut table: Option<usize> = None;
    for line in manifest_lines(manifest) {
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']').trim();
            let is_list = |h: &str| h == "dependencies" || h.ends_with(".dependencies");
            list = !line.starts_with("[[") && is_list(header);
            table = None;
            if let Some((head, name)) = header.rsplit_once('.') {
                if !line.starts_with("[[") && is_list(head) {
                    out.push((name.trim_matches('"').to_string(), None));
                    table = Some(out.len() - 1);
                }
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if let Some(at) = table {
            match key {
                "package" => out[at].0 = value.trim_matches('"').to_string(),
                "path" => out[at].1 = Some(value.trim_matches('"').to_string()),
                _ => {}
            }
        } else if list {
            let (name, sub) = key.split_once('.').unwrap_or((key, ""));
            let name = string_value(value, "package")
                .or_else(|| (sub == "package").then(|| value.trim_matches('"').to_string()))
                .unwrap_or_else(|| name.trim_matches('"').to_string());
            let path = string_value(value, "path")
                .or_else(|| (sub == "path").then(|| value.trim_matches('"').to_string()));
            out.push((name, path));
        }
    }
    out
}

/// The programs that the program in `dir` (named `name`) links, by name or by path.
fn linked_programs(
    name: &str,
    dir: &Path,
    manifest: &str,
    programs: &BTreeMap<String, PathBuf>,
) -> Vec<String> {
    let bin = root().join("bin");
    let program_dirs: BTreeSet<PathBuf> = programs
        .values()
        .filter_map(|d| d.canonicalize().ok())
        .collect();
    let mut out = Vec::new();
    for (dependency, path) in dependencies(manifest) {
        let by_path = path
            .and_then(|p| dir.join(p).canonicalize().ok())
            .is_some_and(|p| p.starts_with(&bin) || program_dirs.contains(&p));
        if (programs.contains_key(&dependency) || by_path) && dependency != name {
            out.push(dependency);
        }
    }
    out
}

#[test]
fn no_program_depends_on_another_program() {
    let programs = programs();
    assert!(programs.len() >= 5, "the programs under bin/: {programs:?}");
    let mut problems = Vec::new();
    for (name, dir) in &programs {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("a manifest");
        for other in linked_programs(name, dir, &manifest, &programs) {
            problems.push(format!(
                "{}: [dependencies] names the program {other}: what two programs share \
                 belongs in a library under crates/",
                dir.join("Cargo.toml").display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The manifest reader sees a program named in each way a manifest can name a dependency, and
/// leaves dev-dependencies alone.
#[test]
fn the_manifest_check_sees_every_form_of_dependency() {
    let manifest = r#"
[package]
name = "vrrpd"

[dependencies]
ipi-core.workspace = true
ipam = { path = "../ipam", default-features = false }
store = { package = "dns-render", version = "0.1" }
# lb-proxy = { path = "../lb-proxy" }

[target.'cfg(unix)'.dependencies]
mdns-publish.workspace = true

[dependencies.proxy]
package = "lb-proxy"

[dev-dependencies]
vrrpd = { path = "." }
ipi-net-tests = { path = "../../tests" }
"#;
    assert_eq!(package_name(manifest).as_deref(), Some("vrrpd"));
    let names: Vec<String> = dependencies(manifest).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["ipi-core", "ipam", "dns-render", "mdns-publish", "lb-proxy"]
    );
    let programs = programs();
    let dir = root().join("bin/vrrpd");
    assert_eq!(
        linked_programs("vrrpd", &dir, manifest, &programs),
        ["ipam", "dns-render", "mdns-publish", "lb-proxy"]
    );
    // By path alone, whatever the name.
    let renamed = "[dependencies]\nother = { path = \"../ipam\" }\n";
    assert_eq!(
        linked_programs("vrrpd", &dir, renamed, &programs),
        ["other"]
    );
}

/// The checks above must be able to fail: a made-up crate with a cycle and a main with bodies.
#[test]
fn the_checks_see_a_cycle_and_a_fat_main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\n").expect("write");
    std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A;\n").expect("write");
    std::fs::create_dir(src.join("b")).expect("mkdir");
    std::fs::write(
        src.join("b/mod.rs"),
        "mod c;\nuse crate::{x, a::{A as Z, self}};\npub struct B;\n",
    )
    .expect("write");
    std::fs::write(src.join("b/c.rs"), "use super::super::a::A;\n").expect("write");
    let found = edges(src);
    let graph: BTreeMap<String, BTreeSet<String>> = found
        .iter()
        .filter(|(p, _, _)| p.is_empty())
        .fold(BTreeMap::new(), |mut g, (_, f, t)| {
            g.entry(f.clone()).or_default().insert(t.clone());
            g
        });
    assert_eq!(
        cycle(&graph),
        Some(vec!["a".to_string(), "b".to_string(), "a".to_string()])
    );
    assert!(found.contains(&(vec![], "b".to_string(), "a".to_string())));
}

/// The parent-child and size checks must be able to fail: a parent that takes from its child
/// which takes a name the parent defines, a re-export that is no loop, and a module too long.
#[test]
fn the_checks_see_a_parent_child_loop_and_a_long_module() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path();
    let write = |path: &str, text: &str| std::fs::write(src.join(path), text).expect("write");
    write("lib.rs", "pub mod a;\npub mod r;\n");
    std::fs::create_dir(src.join("a")).expect("mkdir");
    write(
        "a.rs",
        "mod b;\npub use b::Helper;\npub struct Daemon;\npub(super) fn handle_all() {}\n",
    );
    write(
        "a/b.rs",
        "use super::{handle_all, Daemon};\npub struct Helper;\n",
    );
    // A parent that only re-exports what its child takes: no loop.
    std::fs::create_dir(src.join("r")).expect("mkdir");
    write(
        "r.rs",
        "mod c;\nmod d;\npub use d::Shared;\npub use c::C;\n",
    );
    write("r/c.rs", "use super::Shared;\npub struct C;\n");
    write("r/d.rs", "pub struct Shared;\n");
    let loops = parent_child_loops(src);
    assert_eq!(loops.len(), 1, "{loops:?}");
    let (parent, child, names) = &loops[0];
    assert_eq!(
        (parent.as_slice(), child.as_str()),
        (["a".to_string()].as_slice(), "b")
    );
    assert_eq!(
        names.iter().map(String::as_str).collect::<Vec<_>>(),
        ["Daemon", "handle_all"]
    );
    assert!(long_modules(src).is_empty());
    write(
        "r/d.rs",
        &"pub struct Shared;\n".repeat(MAX_MODULE_LINES + 1),
    );
    assert_eq!(
        long_modules(src),
        [(vec!["r".to_string(), "d".to_string()], MAX_MODULE_LINES + 1)]
    );
}
