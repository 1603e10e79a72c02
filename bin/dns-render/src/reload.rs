//! Telling a running server that its files changed: SIGHUP to the process a pid file names, as
//! `kill -HUP $(cat FILE)` would, from dns-render's own process (nothing more to start, so
//! nothing more that can fail to start), but only when that process is the program expected
//! (`--reload-name`, dnsmasq): a stale pid file whose pid now belongs to another program is
//! refused. The process is held by a pidfd from before its name is checked until the signal
//! is sent through it, so a pid that is reused meanwhile cannot be signalled.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

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
    /// The process is not the expected program, or is gone: not signalled.
    #[error(
        "{path}: process {pid} is {found}, not {expected:?}: not signalled (a stale pid file?)"
    )]
    Unexpected {
        /// The pid file.
        path: PathBuf,
        /// The process it names.
        pid: i32,
        /// The name expected (`--reload-name`).
        expected: String,
        /// What is there: its name in quotes, or that no such process runs.
        found: String,
    },
    /// The signal could not be sent.
    #[error("{path}: SIGHUP to {pid}: {source}")]
    Kill {
        /// The pid file.
        path: PathBuf,
        /// The process.
        pid: i32,
        /// Why.
        source: io::Error,
    },
}

/// Sends SIGHUP to the process whose id `path` holds, when its name (`/proc/PID/comm`, at most
/// 15 bytes) is `expected`'s.
pub fn hup(path: &Path, expected: &str) -> Result<i32, ReloadError> {
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
    let unexpected = |found: String| ReloadError::Unexpected {
        path: path.to_owned(),
        pid,
        expected: expected.to_string(),
        found,
    };
    let gone = || unexpected("not running".to_string());
    // ESRCH: no such process; anything else (no pidfd_open before Linux 5.3, no descriptor
    // left) is this side's failure, not a stale pid file.
    let pidfd = pidfd_open(pid).map_err(|source| match source.raw_os_error() {
        Some(libc::ESRCH) => gone(),
        _ => ReloadError::Kill {
            path: path.to_owned(),
            pid,
            source,
        },
    })?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).map_err(|_| gone())?;
    let comm = comm.trim_end_matches('\n');
    if comm.as_bytes() != comm_of(expected) {
        return Err(unexpected(format!("{comm:?}")));
    }
    pidfd_send_signal(&pidfd, libc::SIGHUP).map_err(|source| ReloadError::Kill {
        path: path.to_owned(),
        pid,
        source,
    })?;
    Ok(pid)
}

/// The name the kernel keeps of a program called `name`: its first 15 bytes.
fn comm_of(name: &str) -> &[u8] {
    &name.as_bytes()[..name.len().min(15)]
}

/// pidfd_open(2): a descriptor for the process `pid` that stays its own when it exits.
#[allow(unsafe_code)]
fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = i32::try_from(fd).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor is new and ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// pidfd_send_signal(2): `signal` to the process `pidfd` holds (ESRCH when it has exited, even
/// if its pid was given to another since).
#[allow(unsafe_code)]
fn pidfd_send_signal(pidfd: &OwnedFd, signal: i32) -> io::Result<()> {
    // SAFETY: pidfd_send_signal(2) with a descriptor we hold, no siginfo and no flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// [`hup`] for each of `paths` (each process expected to be `expected`), each failure logged
/// and the others still told.
pub fn hup_all(paths: &[PathBuf], expected: &str) {
    for path in paths {
        match hup(path, expected) {
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
        let e = hup(&missing, "dnsmasq").unwrap_err().to_string();
        assert!(e.contains("missing.pid"), "{e}");
        for (text, name) in [("x\n", "x.pid"), ("1\n", "init.pid"), ("-5", "neg.pid")] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let e = hup(&path, "dnsmasq").unwrap_err();
            assert!(matches!(e, ReloadError::Parse { .. }), "{e}");
            assert!(e.to_string().contains(name), "{e}");
        }
    }

    /// A child that counts SIGHUPs (a shell, `sh` by name): told once through its pid file.
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
        assert_eq!(
            hup(&pidfile, "sh").unwrap(),
            i32::try_from(child.id()).unwrap()
        );
        let told = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            std::fs::read_to_string(&count).is_ok_and(|c| c.trim() == "1")
        });
        let _ = child.kill();
        let _ = child.wait();
        assert!(told, "the child never counted a SIGHUP");
    }

    /// A stale pid file naming an unrelated program (a `sleep`, which SIGHUP would kill): refused
    /// with the pid, the file and what runs there, and the process lives on.
    #[test]
    fn another_program_or_none_is_not_signalled() {
        let dir = tempfile::tempdir().unwrap();
        let mut sleep = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = sleep.id();
        let pidfile = dir.path().join("dnsmasq.pid");
        std::fs::write(&pidfile, format!("{pid}\n")).unwrap();
        let e = hup(&pidfile, "dnsmasq").unwrap_err();
        assert!(matches!(e, ReloadError::Unexpected { .. }), "{e}");
        let text = e.to_string();
        for part in [
            &format!("process {pid}"),
            "dnsmasq.pid",
            "\"sleep\"",
            "\"dnsmasq\"",
        ] {
            assert!(text.contains(part), "{part} not in {text}");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(
            sleep.try_wait().unwrap().is_none(),
            "the sleep got a signal"
        );
        let _ = sleep.kill();
        let _ = sleep.wait();
        // Now the pid runs nothing.
        let e = hup(&pidfile, "dnsmasq").unwrap_err().to_string();
        assert!(e.contains("not running"), "{e}");
    }

    #[test]
    fn long_names_are_compared_as_the_kernel_keeps_them() {
        assert_eq!(comm_of("dnsmasq"), b"dnsmasq");
        assert_eq!(comm_of("a-very-long-program-name"), b"a-very-long-pro");
    }
}
