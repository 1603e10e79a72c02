//! keepalived.conf's blocks: the lines of [`super::lexer`] (where every brace is a line of
//! its own, as keepalived reads them) to statements, each with its `{ }` block when the next
//! line opens one.

use super::error::{ConfigErrors, ConfigWarnings};
use super::lexer::{self, LexOptions, Line};
use super::model::Location;

/// A statement: a keyword, its arguments, and the block that follows it, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The keyword.
    pub keyword: String,
    /// The words after it on its line.
    pub args: Vec<String>,
    /// The statements of its `{ }` block.
    pub block: Option<Vec<Node>>,
    /// Where the keyword is.
    pub location: Location,
}

/// Reads `text` (from `origin`, whose directory anchors relative includes) into statements.
/// Errors and warnings are collected; what could be read is returned.
pub fn parse(
    text: &str,
    origin: &str,
    options: &LexOptions,
    errors: &mut ConfigErrors,
    warnings: &mut ConfigWarnings,
) -> Vec<Node> {
    let lines = lexer::lines(text, origin, options, errors, warnings);
    let mut at = 0;
    statements(&lines, &mut at, None, 0, errors)
}

/// Blocks nest this deep at most: keepalived's nest four deep; deeper input (a definition
/// expanded to thousands of `{`) would otherwise recurse until the stack overflows.
const MAX_DEPTH: usize = 32;

/// Past the `{` at `*at - 1`: every line to its matching `}` (or the end).
fn skip_block(lines: &[Line], at: &mut usize) {
    let mut open = 1usize;
    while let Some(line) = lines.get(*at) {
        *at += 1;
        if is(line, "{") {
            open += 1;
        } else if is(line, "}") {
            open -= 1;
            if open == 0 {
                return;
            }
        }
    }
}

fn is(line: &Line, brace: &str) -> bool {
    matches!(line.words.as_slice(), [w] if w.is(brace))
}

/// Statements until the end of input or, inside a block (opened at `open`, `depth` blocks
/// deep), its closing brace.
fn statements(
    lines: &[Line],
    at: &mut usize,
    open: Option<&Location>,
    depth: usize,
    errors: &mut ConfigErrors,
) -> Vec<Node> {
    let mut nodes = Vec::new();
    while let Some(line) = lines.get(*at) {
        *at += 1;
        if is(line, "}") {
            if open.is_some() {
                return nodes;
            }
            errors.push(&line.location, "`}` closes no block");
            continue;
        }
        if is(line, "{") {
            errors.push(&line.location, "`{` opens a block that no keyword names");
            continue;
        }
        let mut node = Node {
            keyword: line.words[0].text.clone(),
            args: line.words[1..].iter().map(|w| w.text.clone()).collect(),
            block: None,
            location: line.location.clone(),
        };
        if lines.get(*at).is_some_and(|l| is(l, "{")) {
            *at += 1;
            if depth + 1 >= MAX_DEPTH {
                let why = format!("blocks nested more than {MAX_DEPTH} deep: this one is skipped");
                errors.push(&node.location, why);
                skip_block(lines, at);
                continue;
            }
            let block = statements(lines, at, Some(&node.location), depth + 1, errors);
            node.block = Some(block);
        }
        nodes.push(node);
    }
    if let Some(open) = open {
        let end = lines.last().map_or(open, |l| &l.location);
        errors.push(
            end,
            format!("a block is not closed: `}}` missing at the end of the file (the block opened at {open})"),
        );
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> LexOptions {
        LexOptions {
            config_id: "node1".into(),
        }
    }

    fn tree(text: &str) -> (Vec<Node>, String) {
        let (mut errors, mut warnings) = Default::default();
        let nodes = parse(text, "k.conf", &options(), &mut errors, &mut warnings);
        (nodes, errors.to_string())
    }

    #[test]
    fn blocks_nested_past_the_limit_are_an_error_and_skipped() {
        let deep = format!("{}{}", "a {\n".repeat(100_000), "}\n".repeat(100_000));
        let (nodes, errors) = tree(&format!("{deep}after x\n"));
        assert!(errors.contains("nested more than 32 deep"), "{errors}");
        assert_eq!(nodes.len(), 2, "the outer block, then what follows it");
        assert_eq!(nodes[1].keyword, "after");
    }

    #[test]
    fn blocks_open_on_the_line_or_the_next_and_nest() {
        let (nodes, errors) = tree(
            "global_defs\n{\n  router_id r1\n}\nvrrp_instance A {\n  authentication {\n    \
             auth_type PASS\n  }\n  track_script { chk_a weight 2 }\n}\n",
        );
        assert_eq!(errors, "");
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[0].block.as_ref().unwrap()[0].args, ["r1"]);
        let inst = nodes[1].block.as_ref().unwrap();
        assert_eq!(inst[0].keyword, "authentication");
        assert_eq!(inst[0].block.as_ref().unwrap()[0].args, ["PASS"]);
        let tracked = &inst[1].block.as_ref().unwrap()[0];
        assert_eq!(tracked.keyword, "chk_a");
        assert_eq!(tracked.args, ["weight", "2"]);
        assert_eq!(nodes[1].location.line, 5);
    }

    #[test]
    fn unbalanced_braces_are_reported_with_their_line() {
        let (_, errors) = tree("vrrp_instance A {\n  priority 1\n");
        assert!(
            errors.contains("k.conf:2: a block is not closed"),
            "{errors}"
        );
        let (_, errors) = tree("}\n");
        assert!(errors.contains("k.conf:1: `}` closes no block"), "{errors}");
    }

    /// keepalived reads every brace as a word of its own, wherever it stands.
    #[test]
    fn braces_anywhere_on_a_line() {
        let (nodes, errors) = tree(
            "vrrp_instance A { interface eth0\n  authentication { auth_type PASS\n    \
             auth_pass secret1 }\n  virtual_ipaddress { 10.0.0.1/16 }\n} vrrp_script s\n{ \
             script \"/bin/x {y}\" }\n",
        );
        assert_eq!(errors, "");
        let inst = nodes[0].block.as_ref().unwrap();
        assert_eq!(
            (inst[0].keyword.as_str(), inst[0].args.as_slice()),
            ("interface", &["eth0".to_string()][..])
        );
        let auth = inst[1].block.as_ref().unwrap();
        assert_eq!(auth[0].args, ["PASS"]);
        assert_eq!(
            (auth[1].keyword.as_str(), auth[1].location.line),
            ("auth_pass", 3)
        );
        assert_eq!(inst[2].block.as_ref().unwrap()[0].keyword, "10.0.0.1/16");
        assert_eq!(nodes[1].keyword, "vrrp_script");
        assert_eq!(nodes[1].location.line, 5);
        assert_eq!(nodes[1].block.as_ref().unwrap()[0].args, ["/bin/x {y}"]);
    }
}
