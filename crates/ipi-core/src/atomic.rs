//! Atomic, change-aware file writes: the way every ipi-net program writes a file that another
//! program reads (docs/ARCHITECTURE.md, conventions: files).
//!
//! A reader sees the old file or the new one, never half of one: the content goes to a temporary
//! file in the same directory (so the rename cannot cross file systems), is flushed to disk, and
//! is renamed over the target; then the directory is flushed so the rename survives a crash.
//! Content equal to what is there already is not written at all, so the file and its mtime stay
//! untouched and a path unit or `inotify` watcher is not woken for nothing. A directory that is
//! not there yet is created first, as `install -d` would ([`create_dir`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// Write `contents` to `path` atomically, unless the file already holds exactly that.
///
/// A new file gets mode 0644 less the umask; a replaced file keeps its permissions. A missing
/// directory on the way is created ([`create_dir`]). On error the temporary file is removed and
/// `path` is untouched.
pub fn write(path: &Path, contents: &[u8]) -> Result<Outcome, WriteError> {
    let fail = |step: &'static str| {
        move |source| WriteError {
            path: path.to_owned(),
            step,
            source,
        }
    };
    let existing = match fs::read(path) {
        Ok(existing) => Some(existing),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(fail("reading the current content")(e)),
    };
    if existing.as_deref() == Some(contents) {
        return Ok(Outcome::Unchanged);
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    create_dir(dir).map_err(fail("creating the directory"))?;
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

    let result = write_and_rename(&temp, path, contents, existing.is_some());
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

/// Creates `dir` and its missing parents, as `install -d` does: each new directory gets mode
/// 0755 (whatever the umask), a directory already there is left as it is. An existing
/// non-directory on the way is an error.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
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
    replacing: bool,
) -> Result<(), (&'static str, io::Error)> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(temp)
        .map_err(|e| ("creating the temporary file", e))?;
    file.write_all(contents)
        .map_err(|e| ("writing the temporary file", e))?;
    if replacing {
        let permissions = fs::metadata(path)
            .map_err(|e| ("reading the current permissions", e))?
            .permissions();
        file.set_permissions(permissions)
            .map_err(|e| ("keeping the current permissions", e))?;
    }
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
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        write(&path, b"new").unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
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
}
