//! Shell completions generated from a program's clap definition, checked in
//! contrib/completions/: the test every program runs beside [`crate::man::check`], so that the
//! completions never drift from `--help`.

use std::path::Path;

use clap_complete::Shell;

/// The shells completions are written for, and the file each one's goes to in `dir`: bash's
/// `PROGRAM.bash`, zsh's `_PROGRAM` (its `#compdef` convention), fish's `PROGRAM.fish`.
fn files(program: &str) -> [(Shell, String); 3] {
    [
        (Shell::Bash, format!("{program}.bash")),
        (Shell::Zsh, format!("_{program}")),
        (Shell::Fish, format!("{program}.fish")),
    ]
}

/// Compares the bash, zsh and fish completions of `top` in `dir` with what clap_complete
/// generates; with `UPDATE_COMPLETIONS` set in the environment (not under CI:
/// [`crate::updating`]), writes them instead. Returns the stale files (empty when all match).
pub fn check(top: &clap::Command, dir: &Path) -> Vec<String> {
    let program = top.get_name().to_string();
    let update = crate::updating("UPDATE_COMPLETIONS");
    let mut stale = Vec::new();
    for (shell, file) in files(&program) {
        let mut rendered = Vec::new();
        clap_complete::generate(shell, &mut top.clone(), &program, &mut rendered);
        let path = dir.join(file);
        if update {
            if let Err(e) = std::fs::write(&path, &rendered) {
                stale.push(format!("{}: {e}", path.display()));
            }
        } else if std::fs::read(&path).ok().as_deref() != Some(rendered.as_slice()) {
            stale.push(path.display().to_string());
        }
    }
    stale
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> clap::Command {
        clap::Command::new("demo")
            .subcommand(clap::Command::new("run").arg(clap::Arg::new("config").long("config")))
    }

    #[test]
    fn writes_then_finds_nothing_stale_then_finds_a_change() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let stale = check(&command(), dir.path());
        assert_eq!(stale.len(), 3, "nothing written yet: {stale:?}");
        for (shell, file) in files("demo") {
            let mut rendered = Vec::new();
            clap_complete::generate(shell, &mut command(), "demo", &mut rendered);
            std::fs::write(dir.path().join(&file), &rendered).unwrap_or_else(|e| panic!("{e}"));
            let text = String::from_utf8_lossy(&rendered);
            assert!(text.contains("config"), "{file}: {text}");
        }
        assert!(check(&command(), dir.path()).is_empty());
        let changed = command().subcommand(clap::Command::new("stop"));
        assert_eq!(check(&changed, dir.path()).len(), 3);
    }
}
