//! keepalived's `track_file`: the integer a file holds, read as keepalived reads it
//! (track_file.c: `strtol(buf, NULL, 0)` of its first 127 bytes; a missing or empty file is
//! 0; a value outside 32 bits is ignored) and reported to the instances that track it.
//! keepalived re-reads a file when inotify says it changed; vrrpd reads it every [`POLL`].

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

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

/// What file `f` holds now (0 when it cannot be read).
pub fn read(f: &TrackFile) -> Option<i64> {
    let bytes = std::fs::read(&f.path).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(READ)]).into_owned();
    value(&text)
}

/// keepalived's `init_file`: the value written when the file does not exist, or always with
/// `overwrite`. A failure is logged; the file then reads as whatever it holds.
pub fn init(f: &TrackFile) {
    let Some(init) = f.init else {
        return;
    };
    if !init.overwrite && std::path::Path::new(&f.path).exists() {
        return;
    }
    if let Err(e) = std::fs::write(&f.path, format!("{}\n", init.value)) {
        tracing::warn!("track_file {}: init_file {}: {e}", f.name, f.path);
    }
}

/// Reads every tracked file until the receiver goes away, reporting `(name, value)` at once
/// and whenever the value changes.
pub async fn watch(files: Vec<TrackFile>, tx: UnboundedSender<(String, i64)>) {
    // The last reading of each file (None: no 32-bit value), so that each change is logged once
    // and a file that stays unreadable does not log twice a second.
    let mut last: BTreeMap<String, Option<i64>> = BTreeMap::new();
    let mut tick = tokio::time::interval(POLL);
    loop {
        tick.tick().await;
        for f in &files {
            let reading = read(f);
            if last.insert(f.name.clone(), reading) == Some(reading) {
                continue;
            }
            let Some(v) = reading else {
                tracing::info!(
                    "track_file {}: {} holds no 32-bit value: ignored",
                    f.name,
                    f.path
                );
                continue;
            };
            tracing::info!("track_file {}: {} holds {v}", f.name, f.path);
            if tx.send((f.name.clone(), v)).is_err() {
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
        assert_eq!(read(&f), Some(5));
        std::fs::write(&path, "9").unwrap();
        init(&f);
        assert_eq!(read(&f), Some(9));
        f.init = Some(crate::config::FileInit {
            value: -3,
            overwrite: true,
        });
        init(&f);
        assert_eq!(read(&f), Some(-3));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(read(&f), Some(0), "a missing file reads as 0");
    }
}
