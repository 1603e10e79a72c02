//! Atomic, change-aware file writes: the way every ipi-net program writes a file that another
//! program reads (docs/ARCHITECTURE.md, conventions: files).
//!
//! A reader sees the old file or the new one, never half of one: the content goes to a temporary
//! file in the same directory (so the rename cannot cross file systems), is flushed to disk, and
//! is renamed over the target; then the directory is flushed so the rename survives a crash.
//! Content equal to what is there already is not written at all, so the file and its mtime stay
//! untouched and a path unit or `inotify` watcher is not woken for nothing. A directory that is
//! not there yet is created first, as `install -d` would ([`create_dir`]).
//!
//! The target is never followed: a symbolic link at the path is replaced by the file (as the
//! rename always did), a FIFO, device or directory there is an error, and the current content is
//! read through [`open_regular`] (non-blocking, no link followed). A temporary file is named
//! `.NAME.tmp.PID.SEQ`; those a writer that died left behind (no process of that PID runs, or
//! the one that does started after the file was last written: the PID was given again) are
//! removed by the first write of this process into that directory.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The mode of a file [`write()`] creates, whatever the umask.
pub const MODE: u32 = 0o644;

/// Whether a write changed the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The file did not exist or held other content; it now holds the new content.
    Changed,
    /// The file already held exactly this content; nothing was written.
    Unchanged,
}

/// A write that failed; the target is as it was before.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {step}: {source}", path.display())]
pub struct WriteError {
    /// The file that was to be written.
    pub path: PathBuf,
    /// The step that failed.
    pub step: &'static str,
    /// Why.
    #[source]
    pub source: io::Error,
}

/// Distinguishes the temporary files of concurrent writers in one process.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// The directories this process has swept of stale temporary files.
static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Write `contents` to `path` atomically, unless the file already holds exactly that.
///
/// A new file gets mode [`MODE`] (0644) whatever the umask; a replaced file keeps its
/// permissions. A missing directory on the way is created ([`create_dir`]). On error the
/// temporary file is removed and `path` is untouched.
pub fn write(path: &Path, contents: &[u8]) -> Result<Outcome, WriteError> {
    write_mode(path, contents, MODE)
}

/// [`write()`], a new file getting `mode` (e.g. 0o600 for one that holds a secret) whatever the
/// umask.
pub fn write_mode(path: &Path, contents: &[u8], mode: u32) -> Result<Outcome, WriteError> {
    let fail = |step: &'static str| {
        move |source| WriteError {
            path: path.to_owned(),
            step,
            source,
        }
    };
    let existing = current(path).map_err(fail("reading the current content"))?;
    if existing.as_ref().map(|(c, _)| c.as_slice()) == Some(contents) {
        return Ok(Outcome::Unchanged);
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    create_dir(dir).map_err(fail("creating the directory"))?;
    sweep_once(dir);
    let name = path.file_name().ok_or_else(|| {
        fail("naming the file")(io::Error::new(
            ErrorKind::InvalidInput,
            "path has no file name",
        ))
    })?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(
        ".tmp.{}.{}",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    ));
    let temp = dir.join(temp_name);
    let permissions = existing.map_or_else(|| Permissions::from_mode(mode), |(_, p)| p);
    let result = write_and_rename(&temp, path, contents, permissions);
    if result.is_err() {
        // Best effort: the temporary file is ours and useless now; the target was not touched.
        let _ = fs::remove_file(&temp);
    }
    result.map_err(|(step, source)| WriteError {
        path: path.to_owned(),
        step,
        source,
    })?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(fail("flushing the directory"))?;
    Ok(Outcome::Changed)
}

/// What `path` holds now and its permissions: None when nothing or a symbolic link is there
/// (the rename replaces the link, never what it points at).
fn current(path: &Path) -> io::Result<Option<(Vec<u8>, Permissions)>> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
        Ok(m) if m.file_type().is_symlink() => return Ok(None),
        Ok(_) => {}
    }
    let mut file = open_regular(path)?;
    let permissions = file.metadata()?.permissions();
    let mut content = Vec::new();
    file.read_to_end(&mut content)?;
    Ok(Some((content, permissions)))
}

/// Opens `path` for reading as a regular file only: non-blocking, without following a symbolic
/// link at the path, close-on-exec. A FIFO, socket, device, directory or symbolic link there is
/// an error of kind `InvalidInput` that says which, so that nothing can make a reader block.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => not_regular("a symbolic link (not followed)"),
            _ => e,
        })?;
    let kind = file.metadata()?.file_type();
    let what = if kind.is_file() {
        return Ok(file);
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Err(not_regular(what))
}

fn not_regular(what: &str) -> io::Error {
    io::Error::new(
        ErrorKind::InvalidInput,
        format!("{what}, not a regular file: not read"),
    )
}

/// [`sweep`] of `dir`, the first time this process writes there.
fn sweep_once(dir: &Path) {
    let first = SWEPT
        .lock()
        .map(|mut swept| {
            swept
                .get_or_insert_with(HashSet::new)
                .insert(dir.to_owned())
        })
        .unwrap_or(false);
    if first {
        for removed in sweep(dir) {
            tracing::info!(
                "removed {}: a temporary file its writer (no longer running) left",
                removed.display()
            );
        }
    }
}

/// A temporary file younger than this is never swept, whatever its PID says: a writer's lives
/// for milliseconds, and one in another PID namespace (or whose /proc entry this process cannot
/// see) would otherwise look gone.
const SWEEP_AGE: Duration = Duration::from_secs(60);

/// Removes the temporary files (`.NAME.tmp.PID.SEQ`, regular files only) in `dir` whose writer
/// is gone and that are older than a minute (`SWEEP_AGE`); returns them. Best effort: what
/// cannot be read or removed stays.
pub fn sweep(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(writer_pid) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let now = SystemTime::now();
        let written = meta.modified().unwrap_or(now);
        let old = written + SWEEP_AGE < now;
        if meta.is_file()
            && old
            && writer_gone(pid, written)
            && fs::remove_file(entry.path()).is_ok()
        {
            removed.push(entry.path());
        }
    }
    removed
}

/// The writer PID of a temporary file's name `.NAME.tmp.PID.SEQ`; None for any other name.
fn writer_pid(name: &str) -> Option<i32> {
    let (rest, seq) = name.strip_prefix('.')?.rsplit_once('.')?;
    let (rest, pid) = rest.rsplit_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let named = rest.strip_suffix(".tmp").is_some_and(|n| !n.is_empty());
    (named && digits(seq) && digits(pid))
        .then(|| pid.parse().ok())
        .flatten()
        .filter(|&p| p > 0)
}

/// Whether the writer `pid` of a temporary file last written at `written` is gone: no process of
/// that PID runs (in this PID namespace), or the one that does started after the write.
fn writer_gone(pid: i32, written: SystemTime) -> bool {
    match started(pid) {
        None => !Path::new(&format!("/proc/{pid}")).exists(),
        // The boot time has whole seconds: a second of slack.
        Some(at) => at > written + Duration::from_secs(1),
    }
}

/// When process `pid` started: /proc/PID/stat's field 22 (clock ticks of USER_HZ, 100 a
/// second, since boot) after /proc/stat's `btime`. None when it runs no more or cannot be read.
fn started(pid: i32) -> Option<SystemTime> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields from the third on follow the command name's closing parenthesis.
    let ticks: u64 = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(boot_time()?) + Duration::from_millis(ticks * 10))
}

/// /proc/stat's `btime`, read once: None where it cannot be read (a unit's `ProcSubset=pid`
/// hides it; then a PID that runs counts as its file's writer).
fn boot_time() -> Option<u64> {
    static BOOT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *BOOT.get_or_init(|| {
        fs::read_to_string("/proc/stat")
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("btime "))?
            .trim()
            .parse()
            .ok()
    })
}

/// Creates `dir` and its missing parents, as `install -d` does: each new directory gets mode
/// 0755 (whatever the umask), a directory already there is left as it is. An existing
/// non-directory on the way is an error.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir(parent)?;
    }
    match fs::DirBuilder::new().mode(0o755).create(dir) {
        Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(0o755)),
        // Another writer made it meanwhile.
        Err(e) if e.kind() == ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

fn write_and_rename(
    temp: &Path,
    path: &Path,
    contents: &[u8],
    permissions: Permissions,
) -> Result<(), (&'static str, io::Error)> {
    // Readable by us alone until it holds all it should and has its own mode.
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(temp)
        .map_err(|e| ("creating the temporary file", e))?;
    file.write_all(contents)
        .map_err(|e| ("writing the temporary file", e))?;
    // fchmod: the mode is the one asked for (or the replaced file's), not one the umask cut.
    file.set_permissions(permissions)
        .map_err(|e| ("setting the permissions", e))?;
    file.sync_all()
        .map_err(|e| ("flushing the temporary file", e))?;
    fs::rename(temp, path).map_err(|e| ("renaming the temporary file into place", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_then_leaves_equal_content_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Corefile");
        assert_eq!(write(&path, b"one\n").unwrap(), Outcome::Changed);
        assert_eq!(fs::read(&path).unwrap(), b"one\n");
        let mtime = fs::metadata(&path).unwrap().modified().unwrap();
        let inode = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&path).unwrap());
        assert_eq!(write(&path, b"one\n").unwrap(), Outcome::Unchanged);
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.modified().unwrap(), mtime);
        assert_eq!(std::os::unix::fs::MetadataExt::ino(&meta), inode);
        assert_eq!(write(&path, b"two\n").unwrap(), Outcome::Changed);
        assert_eq!(fs::read(&path).unwrap(), b"two\n");
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn keeps_permissions_of_a_replaced_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        fs::write(&path, "old").unwrap();
        // Neither the temporary file's 0600 nor a new file's 0644.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write(&path, b"new").unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o640
        );
    }

    #[test]
    fn creates_missing_directories_as_install_d_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/ipi-net/dns/dnsmasq.conf");
        assert_eq!(write(&path, b"x\n").unwrap(), Outcome::Changed);
        assert_eq!(fs::read(&path).unwrap(), b"x\n");
        for d in ["run", "run/ipi-net", "run/ipi-net/dns"] {
            let mode = fs::metadata(dir.path().join(d))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o7777, 0o755, "{d}");
        }
        // A directory already there keeps its mode.
        let own = dir.path().join("own");
        fs::create_dir(&own).unwrap();
        fs::set_permissions(&own, fs::Permissions::from_mode(0o700)).unwrap();
        create_dir(&own).unwrap();
        assert_eq!(
            fs::metadata(&own).unwrap().permissions().mode() & 0o7777,
            0o700
        );
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_names_it() {
        let dir = tempfile::tempdir().unwrap();
        // A file where a directory should be: it cannot be created.
        fs::write(dir.path().join("not-a-dir"), "keep").unwrap();
        let missing = dir.path().join("not-a-dir").join("file");
        let err = write(&missing, b"x").unwrap_err();
        assert!(err.to_string().contains("not-a-dir/file"), "{err}");
        assert!(create_dir(&dir.path().join("not-a-dir/sub")).is_err());
        // A directory where the file should be: the rename fails, nothing is lost.
        let target = dir.path().join("target");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("inside"), "keep").unwrap();
        assert!(write(&target, b"x").is_err());
        assert_eq!(fs::read(target.join("inside")).unwrap(), b"keep");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    /// The umask is the process's: set and restored inside one test, so no other test sees it.
    #[test]
    #[allow(unsafe_code)]
    fn new_files_get_their_mode_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        for umask in [0o077, 0o000] {
            // SAFETY: umask(2) only sets the process's file mode creation mask.
            let before = unsafe { libc::umask(umask) };
            let plain = dir.path().join(format!("plain-{umask:o}"));
            let secret = dir.path().join(format!("secret-{umask:o}"));
            let written = (write(&plain, b"x"), write_mode(&secret, b"x", 0o600));
            // SAFETY: as above, the mask as it was.
            unsafe { libc::umask(before) };
            written.0.unwrap();
            written.1.unwrap();
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode(&plain), 0o644, "umask {umask:o}");
            assert_eq!(mode(&secret), 0o600, "umask {umask:o}");
        }
    }

    fn aged(path: &Path, to: SystemTime) {
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(to)
            .unwrap();
    }

    #[test]
    fn stale_temporary_files_of_a_dead_writer_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // A child that has exited and been reaped: its pid runs no more.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        let dead = child.id();
        let live = std::process::id();
        let stale = dir.path().join(format!(".hosts.tmp.{dead}.0"));
        let kept = dir.path().join(format!(".hosts.tmp.{live}.7"));
        let other = dir.path().join(format!(".hosts.tmp.{dead}.x"));
        let fresh = dir.path().join(format!(".fresh.tmp.{dead}.0"));
        let long_ago = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        for p in [&stale, &kept, &other, &fresh] {
            fs::write(p, "half").unwrap();
            // The live writer's file is its own of a moment ago.
            if p != &fresh && p != &kept {
                aged(p, long_ago);
            }
        }
        assert_eq!(
            write(&dir.path().join("hosts"), b"new").unwrap(),
            Outcome::Changed
        );
        assert!(!stale.exists(), "a dead writer's temporary file stays");
        assert!(kept.exists(), "a live writer's temporary file was removed");
        assert!(
            fresh.exists(),
            "a temporary file of moments ago was removed"
        );
        // A PID given again: the process that has it now started after the file was written.
        let reused = dir.path().join(format!(".other.tmp.{live}.1"));
        fs::write(&reused, "half").unwrap();
        aged(&reused, long_ago);
        assert_eq!(sweep(dir.path()), [reused]);
        assert!(kept.exists());
        // This test's process started moments ago, by the clock /proc gives.
        let me = started(i32::try_from(live).unwrap()).unwrap();
        let now = SystemTime::now();
        assert!(me <= now + Duration::from_secs(1) && me + Duration::from_secs(600) > now);
        assert!(other.exists(), "a name not ours was removed");
        assert_eq!(writer_pid(".a.tmp.12.3"), Some(12));
        assert_eq!(writer_pid(".tmp.12.3"), None);
        assert_eq!(writer_pid("a.tmp.12.3"), None);
        assert_eq!(writer_pid(".a.tmp.0.3"), None);
    }

    #[test]
    fn the_target_is_never_followed_nor_blocked_on() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert_eq!(write(&link, b"new").unwrap(), Outcome::Changed);
        assert_eq!(fs::read(&victim).unwrap(), b"keep", "the link was followed");
        assert!(fs::symlink_metadata(&link).unwrap().is_file());
        assert_eq!(fs::read(&link).unwrap(), b"new");
        // A FIFO nobody writes: an error at once, not a read that waits for a writer.
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let err = write(&fifo, b"x").unwrap_err().to_string();
        assert!(err.contains("a FIFO, not a regular file"), "{err}");
        let err = open_regular(&victim.with_file_name("link2"));
        assert!(err.is_err());
        std::os::unix::fs::symlink(&victim, dir.path().join("link2")).unwrap();
        let err = open_regular(&dir.path().join("link2"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("symbolic link"), "{err}");
        let err = open_regular(dir.path()).unwrap_err().to_string();
        assert!(err.contains("a directory"), "{err}");
    }

    #[allow(unsafe_code)]
    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }
}
