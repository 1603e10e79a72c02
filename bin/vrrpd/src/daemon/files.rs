//! State files and the status file, written by a thread of their own: an atomic write flushes
//! the file and its directory to disk (milliseconds on a busy disk), and 1,000 instances
//! changing state at once must not hold the event loop for seconds. Writes to one path keep
//! their order; when several are queued only the last is written.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::status::STATUS_FILE;

/// The state directory: a state file per instance and the status file, written by
/// [`Files`]; and whether the status file is due.
#[derive(Debug)]
pub struct StateDir {
    path: PathBuf,
    files: Files,
    /// Something the status file shows changed since it was last written.
    dirty: Cell<bool>,
    /// When the status file was last written.
    written: Cell<tokio::time::Instant>,
}

impl StateDir {
    /// The directory at `path` (made by the caller).
    pub fn new(path: PathBuf) -> StateDir {
        StateDir {
            path,
            files: Files::start(),
            dirty: Cell::new(false),
            written: Cell::new(tokio::time::Instant::now()),
        }
    }

    /// Writes `STATE_DIR/INSTANCE` (the writes to one file keep their order, so every state
    /// file is written this way).
    pub fn state(&self, instance: &str, contents: Vec<u8>) {
        self.files.write(self.path.join(instance), contents);
    }

    /// Something the status file shows changed.
    pub fn changed(&self) {
        self.dirty.set(true);
    }

    /// Whether a change waits and the last write is at least `delay` old.
    pub fn due(&self, delay: Duration) -> bool {
        self.dirty.get() && self.written.get().elapsed() >= delay
    }

    /// Whether the last write is at least `age` old.
    pub fn older_than(&self, age: Duration) -> bool {
        self.written.get().elapsed() >= age
    }

    /// Writes the status file.
    pub fn status(&self, text: String) {
        self.dirty.set(false);
        self.written.set(tokio::time::Instant::now());
        self.files
            .write(self.path.join(STATUS_FILE), text.into_bytes());
    }

    /// Waits until everything written so far is on disk.
    pub fn flush(&self) {
        self.files.flush();
    }
}

enum Job {
    Write(PathBuf, Vec<u8>),
    Flush(mpsc::SyncSender<()>),
}

/// The writer thread.
#[derive(Debug)]
pub struct Files {
    tx: mpsc::Sender<Job>,
    thread: Option<JoinHandle<()>>,
}

impl Default for Files {
    fn default() -> Self {
        Files::start()
    }
}

impl Files {
    /// Starts the thread.
    pub fn start() -> Files {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("vrrpd-files".into())
            .spawn(move || writer(&rx))
            .ok();
        Files { tx, thread }
    }

    /// Writes `contents` to `path` atomically, soon.
    pub fn write(&self, path: PathBuf, contents: Vec<u8>) {
        if self.thread.is_none() {
            write_now(&path, &contents);
            return;
        }
        if let Err(mpsc::SendError(Job::Write(path, contents))) =
            self.tx.send(Job::Write(path, contents))
        {
            write_now(&path, &contents);
        }
    }

    /// Waits until everything sent before is on disk.
    pub fn flush(&self) {
        let (done, wait) = mpsc::sync_channel(1);
        if self.tx.send(Job::Flush(done)).is_ok() {
            let _ = wait.recv();
        }
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        self.flush();
        if let Some(thread) = self.thread.take() {
            drop(std::mem::replace(&mut self.tx, mpsc::channel().0));
            let _ = thread.join();
        }
    }
}

fn writer(rx: &mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut pending = BTreeMap::new();
        let mut flushes = Vec::new();
        let mut job = Some(first);
        while let Some(j) = job {
            match j {
                Job::Write(path, contents) => {
                    pending.insert(path, contents);
                }
                Job::Flush(done) => flushes.push(done),
            }
            job = rx.try_recv().ok();
        }
        for (path, contents) in pending {
            write_now(&path, &contents);
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

fn write_now(path: &std::path::Path, contents: &[u8]) {
    if let Err(e) = ipi_core::atomic::write(path, contents) {
        tracing::error!("{e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_write_wins_and_flush_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("VI_1");
        let files = Files::start();
        for n in 0..100 {
            files.write(path.clone(), format!("{n}\n").into_bytes());
        }
        files.flush();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "99\n");
    }
}
