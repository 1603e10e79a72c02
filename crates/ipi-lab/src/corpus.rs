//! A corpus of real configuration files from public projects (`tests/fixtures/NAME-corpus`):
//! its files, and its README's table (the files it describes) and list of exceptions. Shared
//! by the keepalived.conf and haproxy.cfg corpus tests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One corpus directory.
#[derive(Debug, Clone)]
pub struct Corpus {
    dir: PathBuf,
    extension: &'static str,
}

impl Corpus {
    /// `tests/fixtures/NAME` of the workspace, its files those ending in `.EXTENSION`.
    pub fn new(name: &str, extension: &'static str) -> Corpus {
        Corpus {
            dir: Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures")
                .join(name),
            extension,
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its files, sorted. Panics (failing the test) when the directory cannot be read.
    pub fn files(&self) -> Vec<PathBuf> {
        let read = std::fs::read_dir(&self.dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", self.dir.display()));
        let mut files: Vec<PathBuf> = read
            .map(|e| {
                e.unwrap_or_else(|e| panic!("{}: {e}", self.dir.display()))
                    .path()
            })
            .filter(|p| p.extension().is_some_and(|e| e == self.extension))
            .collect();
        files.sort();
        files
    }

    /// The README's rows: the files it describes (the first column, `` | `FILE` ``) and its
    /// exceptions (the `` - `FILE`: reason `` items under "## Exceptions").
    pub fn readme(&self) -> (BTreeSet<String>, BTreeSet<String>) {
        let path = self.dir.join("README.md");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let quoted = |line: &str, prefix: &str| {
            line.strip_prefix(prefix)
                .and_then(|rest| rest.split('`').next())
                .map(str::to_string)
        };
        let mut described = BTreeSet::new();
        let mut exceptions = BTreeSet::new();
        let mut in_exceptions = false;
        for line in text.lines() {
            if line.starts_with("## ") {
                in_exceptions = line == "## Exceptions";
            }
            if let Some(file) = quoted(line, "| `") {
                described.insert(file);
            }
            if in_exceptions {
                exceptions.extend(quoted(line, "- `"));
            }
        }
        (described, exceptions)
    }
}

/// A file's name, for messages and the README's rows.
pub fn name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
