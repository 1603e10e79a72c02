use super::*;

fn options() -> LexOptions {
    LexOptions {
        config_id: "node1".into(),
    }
}

/// The lines of `text` as words joined by one space, and the errors and warnings.
fn read(text: &str, origin: &str) -> (Vec<String>, String, String) {
    let (mut errors, mut warnings) = Default::default();
    let lines = lines(text, origin, &options(), &mut errors, &mut warnings);
    let texts = lines
        .iter()
        .map(|l| {
            l.words
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    (texts, errors.to_string(), warnings.to_string())
}

fn texts(text: &str) -> Vec<String> {
    let (lines, errors, _) = read(text, "k.conf");
    assert_eq!(errors, "");
    lines
}

#[test]
fn words_quotes_and_comments() {
    let words = split_words(r#"script "/bin/x \"a b\"" arg"#).unwrap();
    let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(texts, ["script", r#"/bin/x "a b""#, "arg"]);
    assert!(words[1].quoted);
    assert_eq!(split_words(r#"a"b c"d"#).unwrap().len(), 3);
    assert_eq!(split_words(r#"script "open"#), Err(LexError::UnclosedQuote));
    assert_eq!(decomment("  a b # c").0, "a b");
    assert_eq!(decomment("a ! c").0, "a");
    assert_eq!(decomment(r##"a "#b" c#d"##).0, r##"a "#b" c"##);
    assert_eq!(decomment(r"a\#b \!").0, "a#b !");
    assert_eq!(decomment("a  \\"), ("a\\".to_string(), true));
    assert_eq!(decomment("a\\\\"), ("a\\\\".to_string(), false));
}

#[test]
fn braces_are_lines_of_their_own_unless_quoted() {
    assert_eq!(
        texts("authentication { auth_type PASS\nauth_pass secret1 }\n"),
        [
            "authentication",
            "{",
            "auth_type PASS",
            "auth_pass secret1",
            "}"
        ]
    );
    assert_eq!(texts("a{b}c \"{x}\"}"), ["a", "{", "b", "}", "c {x}", "}"]);
    let (mut errors, mut warnings) = Default::default();
    let l = lines("x \"{\"", "k", &options(), &mut errors, &mut warnings);
    assert!(l[0].words[1].quoted && !l[0].words[1].is("{"));
}

#[test]
fn conditional_lines_keep_only_this_configuration_id() {
    assert_eq!(
        texts("@node1 priority 150\n@node2 priority 100\n@^node1 state BACKUP\n@^node2 state MASTER\n@node1\n"),
        ["priority 150", "state MASTER"]
    );
}

#[test]
fn definitions_and_substitution() {
    assert_eq!(
        texts(
            "$IF=eth0\n$VIP = 192.0.2.10/24 # a comment\ninterface $IF\nvirtual_ipaddress { ${VIP} }\n\
             x $NOPE ${IF}x $IFx $IF,y\n$IF=eth1\ninterface $IF\n"
        ),
        [
            "interface eth0",
            "virtual_ipaddress",
            "{",
            "192.0.2.10/24",
            "}",
            "x $NOPE eth0x $IFx eth0,y",
            "interface eth1"
        ]
    );
    // Nested; `$_HASH` and `$_BANG` are comment characters once substituted (keepalived
    // takes comments out again), so they only stand for themselves in quotes.
    assert_eq!(
        texts("$A=$B b\n$B=x\nv $A\nw \"${_HASH}${_BANG}\" $_HASH\n"),
        ["v x b", "w #!"]
    );
}

#[test]
fn a_definition_continues_over_lines_and_expands_to_them() {
    assert_eq!(
        texts(
            "$CHK=vrrp_script chk { \\\n  script /bin/true \\\n  interval 2 }\n$CHK\nnext\n$T= \\\n  a \\\n# c\n  b\n\nx $T\n"
        ),
        [
            "vrrp_script chk",
            "{",
            "script /bin/true",
            "interval 2",
            "}",
            "next",
            "x a",
            "b"
        ]
    );
}

#[test]
fn a_substitution_that_never_ends_is_an_error_with_its_line() {
    let (_, errors, _) = read("$A=x $A\nline $A\n", "k.conf");
    assert!(
        errors.starts_with("k.conf:2: `$` substitution does not end"),
        "{errors}"
    );
    let (_, errors, _) = read("$A=$A\nline $A\n", "k.conf");
    assert!(errors.starts_with("k.conf:2: `$` substitution"), "{errors}");
}

#[test]
fn includes_resolve_relative_to_the_including_file_and_cycles_stop() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("conf.d")).unwrap();
    std::fs::write(
        dir.path().join("conf.d/a.conf"),
        "a $X\ninclude ../leaf.conf\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("conf.d/b.conf"), "b\n").unwrap();
    std::fs::write(dir.path().join("leaf.conf"), "leaf\n").unwrap();
    std::fs::write(dir.path().join("loop.conf"), "include loop.conf\n").unwrap();
    let main = dir.path().join("main.conf").display().to_string();
    let (lines, errors, _) = read("$X=1\ninclude conf.d/*.conf\n", &main);
    assert_eq!(errors, "");
    assert_eq!(lines, ["a 1", "leaf", "b"]);
    let (_, errors, _) = read("include loop.conf\n", &main);
    assert!(errors.contains("nest deeper than 8"), "{errors}");
    // keepalived logs a pattern that matches nothing and reads on; its checked forms do not.
    let (_, errors, warnings) = read("include nothing-*.conf\n", &main);
    assert_eq!(errors, "");
    assert!(
        warnings.ends_with("main.conf:1: `include nothing-*.conf`: no file matches"),
        "{warnings}"
    );
    let (_, errors, _) = read("includer nothing.conf\n", &main);
    assert!(
        errors.ends_with("main.conf:1: `include nothing.conf`: no file matches"),
        "{errors}"
    );
}

#[test]
fn pwd_is_the_directory_of_the_file_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.conf");
    let (lines, _, _) = read("script ${_PWD}/chk.sh\n", &file.display().to_string());
    let want = std::fs::canonicalize(dir.path()).unwrap().join("chk.sh");
    assert_eq!(lines, [format!("script {}", want.display())]);
}

#[test]
fn a_multi_line_definition_that_names_itself_ends_with_an_error() {
    // Line 3 expands to `x` and `$B` again, which expands to `x` and `$B`...
    let (lines, errors, _) = read("$B=x\\\n$B\n$B\nafter\n", "k.conf");
    assert!(errors.contains("does not end"), "{errors}");
    assert!(lines.len() <= 2 * MAX_SUBSTITUTIONS, "{}", lines.len());
    assert_eq!(lines.last().map(String::as_str), Some("after"));
}
