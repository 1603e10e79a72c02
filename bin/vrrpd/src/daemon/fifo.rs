//! keepalived's notify FIFOs (`notify_fifo`, `vrrp_notify_fifo`): every state change of an
//! instance or a sync group written as one line, as keepalived 2.2 writes it
//! (`INSTANCE "VI_1" MASTER 100`, `GROUP "G" STOP 0`).
//!
//! A FIFO that does not exist is made (mode 0600) and removed at exit; a path that exists
//! must be a FIFO. It is opened read-write and non-blocking, as keepalived opens it, so that a
//! write never waits for a reader and never fails for want of one: a line that does not fit
//! (nobody has read the pipe's 64 KiB) is dropped and logged, and the daemon goes on. The
//! `..._script` starts once its FIFO is open, with the path as its last argument; at exit the
//! FIFO is closed after the STOP lines, the reader has [`scripts::GRACE`] to read them and
//! end, and is stopped if it has not.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::PathBuf;

use super::script_security::Readers;
use super::scripts;
use crate::config::NotifyFifo;
use crate::fsm::State;

/// The open FIFOs.
#[derive(Default)]
pub struct Fifos {
    open: Vec<Fifo>,
}

struct Fifo {
    path: PathBuf,
    file: File,
    /// vrrpd made it, so removes it at exit.
    made: bool,
    reader: Option<tokio::process::Child>,
}

impl Fifos {
    /// Opens each FIFO of `fifos` (one path once) and starts its admitted reader. A FIFO that
    /// cannot be opened is logged and left out, as keepalived does: the instances run.
    pub fn open(fifos: &[NotifyFifo], readers: &Readers) -> Fifos {
        let mut open: Vec<Fifo> = Vec::new();
        for f in fifos {
            if open.iter().any(|o| o.path == f.path) {
                continue;
            }
            match Fifo::open(f) {
                Ok(mut fifo) => {
                    fifo.start_reader(f, readers);
                    open.push(fifo);
                }
                Err(e) => tracing::error!("{} {}: {e}", f.keyword, f.path.display()),
            }
        }
        Fifos { open }
    }

    /// Writes `KIND "NAME" STATE PRIORITY` to every FIFO.
    pub fn write(&self, kind: &str, name: &str, state: State, priority: u8) {
        if self.open.is_empty() {
            return;
        }
        let state = super::status::keepalived_state(state);
        let line = format!("{kind} \"{name}\" {state} {priority}\n");
        for f in &self.open {
            // Up to PIPE_BUF bytes a pipe write is whole or not at all.
            if let Err(e) = (&f.file).write_all(line.as_bytes()) {
                tracing::warn!(
                    "notify FIFO {}: `{}` not written: {e}",
                    f.path.display(),
                    line.trim_end()
                );
            }
        }
    }

    /// Closes every FIFO (its reader reads what is left, then the end), gives the readers
    /// [`scripts::GRACE`] to end, stops those that have not, and removes the FIFOs vrrpd made.
    pub async fn close(self) {
        let mut readers = Vec::new();
        for f in self.open {
            if f.made {
                if let Err(e) = std::fs::remove_file(&f.path) {
                    tracing::warn!("notify FIFO {}: not removed: {e}", f.path.display());
                }
            }
            readers.extend(f.reader);
        }
        for mut r in readers {
            let ended = tokio::time::timeout(scripts::GRACE, r.wait()).await;
            if ended.is_err() {
                let _ = r.start_kill();
                let _ = r.wait().await;
            }
        }
    }
}

/// Whether a reload from `old` to `new` changes what the FIFOs are (a FIFO, its script, who
/// runs it; not where they are written).
pub fn changed(old: &[NotifyFifo], new: &[NotifyFifo]) -> bool {
    let what = |f: &[NotifyFifo]| -> Vec<_> {
        f.iter()
            .map(|f| {
                let script = f.script.as_ref().map(|(c, u)| (c.words.clone(), u.clone()));
                (f.keyword.clone(), f.path.clone(), script)
            })
            .collect()
    };
    what(old) != what(new)
}

impl Fifo {
    fn open(f: &NotifyFifo) -> Result<Fifo, String> {
        let made = match std::fs::symlink_metadata(&f.path) {
            Ok(m) if m.file_type().is_fifo() => false,
            Ok(_) => return Err("exists and is not a FIFO".into()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                nix::unistd::mkfifo(
                    &f.path,
                    nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
                )
                .map_err(|e| format!("cannot be made: {e}"))?;
                true
            }
            Err(e) => return Err(e.to_string()),
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&f.path)
            .map_err(|e| format!("cannot be opened: {e}"))?;
        Ok(Fifo {
            path: f.path.clone(),
            file,
            made,
            reader: None,
        })
    }

    fn start_reader(&mut self, f: &NotifyFifo, readers: &Readers) {
        let (Some((command, _)), Some((program, who))) = (&f.script, readers.get(&f.path)) else {
            return;
        };
        match scripts::reader(program, command, &f.path, *who) {
            Ok(child) => self.reader = Some(child),
            Err(e) => tracing::error!("{}_script {}: {e}", f.keyword, program.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::config::Location;

    fn fifo(path: &std::path::Path) -> NotifyFifo {
        NotifyFifo {
            keyword: "notify_fifo".into(),
            path: path.to_path_buf(),
            script: None,
            location: Location::default(),
        }
    }

    #[tokio::test]
    async fn lines_as_keepalived_writes_them_into_a_fifo_made_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        // Named twice (notify_fifo and vrrp_notify_fifo on one path): opened once.
        let fifos = Fifos::open(&[fifo(&path), fifo(&path)], &Readers::new());
        assert_eq!(fifos.open.len(), 1);
        assert!(std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_fifo());
        let mut reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .unwrap();
        fifos.write("INSTANCE", "VI_1", State::Master, 100);
        fifos.write("GROUP", "G", State::Stopped, 0);
        // Nobody reads: the pipe fills, the lines that do not fit are dropped, nothing waits.
        for _ in 0..3000 {
            fifos.write("INSTANCE", "VI_1", State::Backup, 100);
        }
        let mut text = String::new();
        let _ = reader.read_to_string(&mut text);
        assert!(
            text.starts_with("INSTANCE \"VI_1\" MASTER 100\nGROUP \"G\" STOP 0\n"),
            "{}",
            &text[..60]
        );
        assert!(text.len() <= 1 << 20);
        fifos.close().await;
        assert!(!path.exists(), "the FIFO it made is removed");
    }

    #[test]
    fn a_path_that_is_no_fifo_is_left_alone_and_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("regular");
        std::fs::write(&path, "kept").unwrap();
        let fifos = Fifos::open(&[fifo(&path)], &Readers::new());
        assert!(fifos.open.is_empty());
        fifos.write("INSTANCE", "VI_1", State::Master, 100);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "kept");
    }
}
