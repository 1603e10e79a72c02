//! Running commands and reporting their failures with the command line and its stderr.

use std::ffi::OsStr;
use std::process::Command;

use thiserror::Error;

/// What went wrong while building or using a lab.
#[derive(Debug, Error)]
pub enum LabError {
    /// A command exited unsuccessfully.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// How it ended.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A command could not be started, or a file could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// Something did not happen in time.
    #[error("timed out after {seconds:.1} s waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        seconds: f64,
    },
}

impl LabError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> LabError {
        let what = what.into();
        move |source| LabError::Io { what, source }
    }
}

/// A finished command's output.
#[derive(Debug, Clone)]
pub struct Output {
    /// Whether it exited 0.
    pub success: bool,
    /// Its exit code (None when killed by a signal).
    pub code: Option<i32>,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// The command line as a person would type it.
pub(crate) fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(OsStr::to_string_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `command` to completion, whatever its status.
pub(crate) fn output(command: &mut Command) -> Result<Output, LabError> {
    let out = command
        .output()
        .map_err(LabError::io(format!("start `{}`", describe(command))))?;
    Ok(Output {
        success: out.status.success(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Runs `command`; a non-zero exit is an error naming it.
pub(crate) fn check(command: &mut Command) -> Result<Output, LabError> {
    let out = output(command)?;
    if out.success {
        Ok(out)
    } else {
        Err(LabError::Command {
            command: describe(command),
            status: out
                .code
                .map_or_else(|| "killed".to_string(), |c| format!("exit {c}")),
            stderr: out.stderr.trim().to_string(),
        })
    }
}

/// `ip ARGS...`, checked.
pub(crate) fn ip<I, S>(args: I) -> Result<Output, LabError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    check(Command::new("ip").args(args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_command_and_its_stderr() {
        let err = check(Command::new("sh").args(["-c", "echo nope >&2; exit 3"])).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("`sh -c echo nope >&2; exit 3`"), "{text}");
        assert!(text.contains("exit 3") && text.contains("nope"), "{text}");
    }

    #[test]
    fn a_missing_program_is_an_io_error_naming_it() {
        let err = check(&mut Command::new("/nonexistent/prog")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/prog"), "{err}");
    }
}
