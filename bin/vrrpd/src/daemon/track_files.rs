//! keepalived's `track_file`: the integer a file holds, read as keepalived reads it
//! (track_file.c: `strtol(buf, NULL, 0)` of its first 127 bytes; a missing or empty file is
//! 0; a value outside 32 bits is ignored) and reported to the instances that track it.
//! keepalived re-reads a file when inotify says it changed; vrrpd reads it every [`POLL`].
//!
//! The read can never hold up the runtime it shares with VRRP: the file is opened non-blocking
//! and without following a symbolic link, and only a regular file is read, 127 bytes at most
//! ([`ipi_core::atomic::open_regular`]). A FIFO, device, directory or link at the path is
//! refused, logged with the path and the reason, and reads as 0, as keepalived reads a file
//! it cannot open. `init_file` is written atomically and never through a link.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read};
use std::path::Path;
use std::time::Duration;

use super::inputs::Inputs;

use crate::config::TrackFile;

/// How often the files are read.
pub const POLL: Duration = Duration::from_millis(500);

/// keepalived reads this much of a file.
const READ: usize = 127;

/// `strtol(text, NULL, 0)`: blanks (C's `isspace`: space, `\t\n\v\f\r`, no other), a sign,
/// then a `0x` hexadecimal, `0` octal or decimal number, as far as its digits go (none: 0).
/// `None` outside keepalived's range (a 32-bit value, or 2^31), which keepalived ignores.
pub fn value(text: &str) -> Option<i64> {
    let t = text.trim_start_matches(is_c_space);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if let Some(hex) = t.strip_prefix("0x").or(t.strip_prefix("0X")) {
        if hex.starts_with(|c: char| c.is_ascii_hexdigit()) {
            (16, hex)
        } else {
            (10, "0")
        }
    } else if t.starts_with('0') {
        (8, t)
    } else {
        (10, t)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let magnitude = if end == 0 {
        0
    } else {
        i64::from_str_radix(&digits[..end], radix).ok()?
    };
    let v = if negative { -magnitude } else { magnitude };
    (i64::from(i32::MIN)..=i64::from(i32::MAX) + 1)
        .contains(&v)
        .then_some(v)
}

/// C's `isspace` in the C locale.
pub fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// One reading of a tracked file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// Its value (None: no 32-bit value, ignored); 0 when it cannot be read.
    pub value: Option<i64>,
    /// Why it was not read, when it is there but was refused or failed (a missing file is 0
    /// without a reason).
    pub refused: Option<String>,
}

/// What file `f` holds now.
pub fn read(f: &TrackFile) -> Reading {
    let mut bytes = Vec::with_capacity(READ);
    let read = ipi_core::atomic::open_regular(Path::new(&f.path))
        .and_then(|file| file.take(READ as u64).read_to_end(&mut bytes));
    let refused = match read {
        Ok(_) => None,
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => {
            bytes.clear();
            Some(e.to_string())
        }
    };
    Reading {
        value: value(&String::from_utf8_lossy(&bytes)),
        refused,
    }
}

/// keepalived's `init_file`: the value written when nothing is at the path (a link counts), or
/// always with `overwrite`; atomically, replacing a link rather than writing where it points.
/// A failure is logged; the file then reads as whatever it holds.
pub fn init(f: &TrackFile) {
    let Some(init) = f.init else {
        return;
    };
    let path = Path::new(&f.path);
    if !init.overwrite && std::fs::symlink_metadata(path).is_ok() {
        return;
    }
    if let Err(e) = ipi_core::atomic::write(path, format!("{}\n", init.value).as_bytes()) {
        tracing::warn!("track_file {}: init_file: {e}", f.name);
    }
}

/// Reads every tracked file until the event loop is gone, reporting its value at once and
/// whenever the value changes.
pub async fn watch(files: Vec<TrackFile>, inputs: Inputs) {
    // The last reading of each file, so that each change is logged once and a file that stays
    // unreadable does not log twice a second.
    let mut last: BTreeMap<String, Reading> = BTreeMap::new();
    let mut tick = tokio::time::interval(POLL);
    loop {
        tick.tick().await;
        for f in &files {
            let reading = read(f);
            if last.get(&f.name) == Some(&reading) {
                continue;
            }
            last.insert(f.name.clone(), reading.clone());
            if let Some(why) = &reading.refused {
                tracing::warn!("track_file {}: {}: {why}; it reads as 0", f.name, f.path);
            }
            let Some(v) = reading.value else {
                tracing::info!(
                    "track_file {}: {} holds no 32-bit value: ignored",
                    f.name,
                    f.path
                );
                continue;
            };
            tracing::info!("track_file {}: {} holds {v}", f.name, f.path);
            if !inputs.file_value(f.name.clone(), v) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_strtol_reads_them() {
        assert_eq!(value(""), Some(0));
        assert_eq!(value("  42\n"), Some(42));
        assert_eq!(value("-7 apples"), Some(-7));
        assert_eq!(value("+3"), Some(3));
        assert_eq!(value("0x1f"), Some(31));
        assert_eq!(value("010"), Some(8));
        assert_eq!(value("09"), Some(0), "octal stops at 9");
        assert_eq!(value("0x"), Some(0));
        assert_eq!(value("abc"), Some(0));
        assert_eq!(value("2147483648"), Some(2_147_483_648));
        assert_eq!(value("2147483649"), None);
        assert_eq!(value("-2147483649"), None);
        // Only C's blanks: strtol stops at a no-break space, as at any other character.
        assert_eq!(value("\x0b\x0c\t 5"), Some(5));
        assert_eq!(value("\u{a0}5"), Some(0));
    }

    #[test]
    fn init_file_writes_only_a_missing_file_unless_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weight");
        let mut f = TrackFile {
            name: "w".into(),
            path: path.display().to_string(),
            weight: 1,
            init: Some(crate::config::FileInit {
                value: 5,
                overwrite: false,
            }),
        };
        init(&f);
        assert_eq!(read(&f).value, Some(5));
        std::fs::write(&path, "9").unwrap();
        init(&f);
        assert_eq!(read(&f).value, Some(9));
        f.init = Some(crate::config::FileInit {
            value: -3,
            overwrite: true,
        });
        init(&f);
        assert_eq!(read(&f).value, Some(-3));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(read(&f).value, Some(0), "a missing file reads as 0");
    }

    fn tracked(path: &Path, init: Option<crate::config::FileInit>) -> TrackFile {
        TrackFile {
            name: "w".into(),
            path: path.display().to_string(),
            weight: 1,
            init,
        }
    }

    /// A FIFO nobody writes, a link, a directory: refused at once with the reason, read as 0.
    #[test]
    fn only_a_regular_file_is_read_and_never_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "42").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let started = std::time::Instant::now();
        for (path, why) in [
            (&fifo, "a FIFO"),
            (&link, "a symbolic link"),
            (&dir.path().to_owned(), "a directory"),
        ] {
            let r = read(&tracked(path, None));
            assert_eq!(r.value, Some(0), "{}", path.display());
            let refused = r.refused.unwrap_or_default();
            assert!(refused.contains(why), "{}: {refused}", path.display());
        }
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(read(&tracked(&target, None)).value, Some(42));
        assert_eq!(read(&tracked(&dir.path().join("none"), None)).refused, None);
    }

    #[test]
    fn only_the_first_127_bytes_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long");
        // 127 blanks then a digit: keepalived reads only the blanks.
        std::fs::write(&path, format!("{}7", " ".repeat(127))).unwrap();
        assert_eq!(read(&tracked(&path, None)).value, Some(0));
        std::fs::write(&path, format!("{}7", " ".repeat(126))).unwrap();
        assert_eq!(read(&tracked(&path, None)).value, Some(7));
    }

    #[test]
    fn init_file_never_writes_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let mut value = crate::config::FileInit {
            value: 5,
            overwrite: false,
        };
        init(&tracked(&link, Some(value)));
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        value.overwrite = true;
        init(&tracked(&link, Some(value)));
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&link).unwrap(), b"5\n");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
    }
}
