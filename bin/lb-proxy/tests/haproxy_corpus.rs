//! The haproxy.cfg corpus (`tests/fixtures/haproxy-corpus`, real files from public projects):
//! haproxy 2.6 (`haproxy -c -f FILE`) and `lb-proxy check-config -f FILE` judge each file.
//! Where haproxy accepts a file, lb-proxy must accept it too (warnings allowed); the
//! exceptions are exactly those the corpus README lists under "Exceptions", so a file that
//! regresses, or one that starts to pass, fails the test. The ratio is printed
//! (`--no-capture` to see it when the test passes).
//!
//! A file naming a certificate (`crt PATH`) that this machine lacks is checked as a copy in a
//! temporary directory where PATH is a stand-in self-signed certificate and key: haproxy
//! would otherwise refuse it for the missing file, which says nothing about the file itself.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use ipi_lab::corpus::{name, Corpus};
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus() -> Corpus {
    Corpus::new("haproxy-corpus", "cfg")
}

/// `file` as it is, or when it names certificates this machine lacks, a copy in `dir` whose
/// `crt` paths are stand-ins made there.
fn with_stand_ins(file: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = String::new();
    let mut changed = false;
    for line in text.lines() {
        let mut words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        let mut line_changed = false;
        for i in 1..words.len() {
            if words[i - 1] == "crt" && !Path::new(&words[i]).exists() {
                let pem = dir.join(format!("stand-in-{i}-{}.pem", out.len()));
                let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
                let both = format!("{}{}", cert.cert.pem(), cert.signing_key.serialize_pem());
                std::fs::write(&pem, both).unwrap();
                words[i] = pem.display().to_string();
                line_changed = true;
            }
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        changed |= line_changed;
        if line_changed {
            out.push_str(&format!("{indent}{}\n", words.join(" ")));
        } else {
            out.push_str(&format!("{line}\n"));
        }
    }
    if !changed {
        return file.to_path_buf();
    }
    let copy = dir.join(name(file));
    std::fs::write(&copy, out).unwrap();
    copy
}

/// A verdict and what the program said.
fn judge(command: &mut Command) -> (bool, String) {
    let out = command.output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn where_haproxy_accepts_a_file_lb_proxy_accepts_it_too() {
    let (described, listed) = corpus().readme();
    let names: BTreeSet<String> = corpus().files().iter().map(|f| name(f)).collect();
    assert!(names.len() >= 20, "the corpus holds {} files", names.len());
    assert_eq!(
        described, names,
        "the README describes every file, no other"
    );
    if !ipi_lab::tool("haproxy", "haproxy") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut accepted, mut ours, mut exceptions) = (0, 0, BTreeSet::new());
    for file in corpus().files() {
        let checked = with_stand_ins(&file, dir.path());
        let (h, h_said) = judge(Command::new("haproxy").arg("-c").arg("-f").arg(&checked));
        let (l, l_said) = judge(
            Command::new(env!("CARGO_BIN_EXE_lb-proxy"))
                .args(["check-config", "-f"])
                .arg(&checked),
        );
        println!(
            "{:<48} haproxy {:<8} lb-proxy {}",
            name(&file),
            if h { "accepts" } else { "refuses" },
            if l { "accepts" } else { "refuses" }
        );
        if !h {
            continue;
        }
        accepted += 1;
        if l {
            ours += 1;
        } else {
            println!("  haproxy said: {h_said}\n  lb-proxy said: {l_said}");
            exceptions.insert(name(&file));
        }
    }
    println!(
        "haproxy accepts {accepted} of {} files; lb-proxy accepts {ours} of those {accepted} \
         ({} exceptions)",
        names.len(),
        exceptions.len()
    );
    assert_eq!(
        exceptions, listed,
        "the files haproxy accepts and lb-proxy refuses are the README's exceptions"
    );
}
