//! Telling a running server that its files changed: SIGHUP to the process a pid file names, as
//! `kill -HUP $(cat FILE)` would, from dns-render's own process (nothing more to start, so
//! nothing more that can fail to start).

use std::path::{Path, PathBuf};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Why a pid file's process was not told.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The pid file could not be read (the server is not running yet, most likely).
    #[error("{path}: {source} (not told: it reads the files when it starts)")]
    Read {
        /// The pid file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The pid file does not hold a process id.
    #[error("{path}: {text:?} is not a process id")]
    Parse {
        /// The pid file.
        path: PathBuf,
        /// What it holds.
        text: String,
    },
    /// The signal could not be sent.
    #[error("{path}: SIGHUP to {pid}: {source}")]
    Kill {
        /// The pid file.
        path: PathBuf,
        /// The process.
        pid: i32,
        /// Why.
        source: nix::Error,
    },
}

/// Sends SIGHUP to the process whose id `path` holds.
pub fn hup(path: &Path) -> Result<i32, ReloadError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReloadError::Read {
        path: path.to_owned(),
        source,
    })?;
    let pid = text
        .trim()
        .parse::<i32>()
        .ok()
        .filter(|p| *p > 1)
        .ok_or_else(|| ReloadError::Parse {
            path: path.to_owned(),
            text: text.trim().chars().take(40).collect(),
        })?;
    kill(Pid::from_raw(pid), Signal::SIGHUP).map_err(|source| ReloadError::Kill {
        path: path.to_owned(),
        pid,
        source,
    })?;
    Ok(pid)
}

/// [`hup`] for each of `paths`, each failure logged and the others still told.
pub fn hup_all(paths: &[PathBuf]) {
    for path in paths {
        match hup(path) {
            Ok(pid) => eprintln!("dns-render: SIGHUP to {pid} ({})", path.display()),
            Err(e) => eprintln!("dns-render: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_pid_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pid");
        let e = hup(&missing).unwrap_err().to_string();
        assert!(e.contains("missing.pid"), "{e}");
        for (text, name) in [("x\n", "x.pid"), ("1\n", "init.pid"), ("-5", "neg.pid")] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let e = hup(&path).unwrap_err();
            assert!(matches!(e, ReloadError::Parse { .. }), "{e}");
            assert!(e.to_string().contains(name), "{e}");
        }
    }

    /// A child that counts SIGHUPs: told once through its pid file.
    #[test]
    fn the_process_in_the_pid_file_gets_sighup() {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("count");
        let script = format!(
            "n=0; trap 'n=$((n+1)); echo $n > {}' HUP; while :; do sleep 0.05; done",
            count.display()
        );
        let mut child = std::process::Command::new("sh")
            .args(["-c", &script])
            .spawn()
            .unwrap();
        let pidfile = dir.path().join("child.pid");
        std::fs::write(&pidfile, format!("{}\n", child.id())).unwrap();
        // Give the shell time to set its trap.
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(hup(&pidfile).unwrap(), i32::try_from(child.id()).unwrap());
        let told = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            std::fs::read_to_string(&count).is_ok_and(|c| c.trim() == "1")
        });
        let _ = child.kill();
        let _ = child.wait();
        assert!(told, "the child never counted a SIGHUP");
    }
}
