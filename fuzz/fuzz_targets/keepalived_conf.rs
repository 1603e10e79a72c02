//! Fuzz vrrpd's keepalived.conf reader: arbitrary text must give a configuration or errors
//! with a place, never a panic; and every error names `fuzz.conf` and a line within the text
//! (or one of the files it includes). The lexer alone (keepalived's: braces anywhere, `$`
//! definitions and substitution, `@ID` lines, includes) must give lines of words where a
//! brace stands alone, each within the text's lines.

#![no_main]

use libfuzzer_sys::fuzz_target;
use vrrpd::config::lexer::{self, LexOptions};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().count().max(1);
    // A fixed configuration id, so that `@fuzz` lines are kept and `@^fuzz` ones dropped.
    let options = LexOptions {
        config_id: "fuzz".into(),
    };
    let (mut errors, mut warnings) = Default::default();
    for line in lexer::lines(&text, "fuzz.conf", &options, &mut errors, &mut warnings) {
        assert!(!line.words.is_empty());
        if line.words.iter().any(|w| w.is("{") || w.is("}")) {
            assert_eq!(line.words.len(), 1, "a brace shares its line: {line:?}");
        }
        if line.location.file == "fuzz.conf" {
            assert!((1..=lines).contains(&line.location.line), "{line:?}");
        }
    }
    let read = vrrpd::config::read_str(&text, "fuzz.conf", &options);
    if let Err(errors) = read.config {
        assert!(!errors.is_empty());
        for (location, message) in errors.0.iter().chain(&read.warnings.0) {
            assert!(!message.is_empty());
            if location.file == "fuzz.conf" {
                assert!(location.line <= lines, "{location}: {message}");
            }
        }
    }
});
