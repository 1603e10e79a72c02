//! The man pages in man/ are generated from the command-line definition; this test fails when
//! they have drifted. `UPDATE_MAN=1 cargo test -p vrrpd --test man_page` regenerates them.

use std::path::PathBuf;

use clap::CommandFactory;

#[test]
fn man_pages_match_the_cli() {
    let man_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../man");
    let top = vrrpd::cli::Cli::command();
    let mut pages = vec![(String::from("vrrpd"), top.clone())];
    for sub in top.get_subcommands() {
        let name = format!("vrrpd-{}", sub.get_name());
        pages.push((
            name.clone(),
            sub.clone()
                .name(name)
                .version(top.get_version().unwrap_or_default().to_owned()),
        ));
    }
    let update = std::env::var_os("UPDATE_MAN").is_some();
    let mut stale = Vec::new();
    for (name, command) in pages {
        let mut rendered = Vec::new();
        clap_mangen::Man::new(command)
            .render(&mut rendered)
            .unwrap();
        let path = man_dir.join(format!("{name}.1"));
        if update {
            std::fs::write(&path, &rendered).unwrap();
        } else if std::fs::read(&path).ok().as_deref() != Some(rendered.as_slice()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "man pages out of step with the CLI: {stale:?}; run UPDATE_MAN=1 cargo test -p vrrpd --test man_page"
    );
}
