//! `ipam gc`: a CNI network's reservations as its runtime's GC judges them, for a person to
//! read before anything is freed (and freed with `--free`).

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

use ipi_core::exit::Status;
use ipi_store::store;

use super::failure::{store_failed, usage, Failure, Outcome};
use crate::cni::config;
use crate::cni::gc::{self, Judged, Verdict};

/// The largest network config or attachment list read.
const MAX_INPUT: u64 = 1 << 20;

fn read_input(path: &Path, what: &str) -> Result<String, Failure> {
    let mut text = String::new();
    let read = if path == Path::new("-") {
        std::io::stdin()
            .lock()
            .take(MAX_INPUT)
            .read_to_string(&mut text)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(MAX_INPUT).read_to_string(&mut text))
    };
    read.map_err(|e| usage(format!("{what} {}: {e}", path.display())))?;
    Ok(text)
}

/// The config of the plugin that calls ipam: `text` itself, or from a conflist (`plugins`)
/// the one plugin with an `ipam` section, given the list's `name` and `cniVersion` as libcni
/// gives them to each plugin it runs.
fn plugin_config(text: &str) -> Result<String, String> {
    let Ok(serde_json::Value::Object(list)) = serde_json::from_str(text) else {
        return Ok(text.to_owned());
    };
    let Some(plugins) = list.get("plugins") else {
        return Ok(text.to_owned());
    };
    let plugins = plugins.as_array().ok_or("plugins: not a list")?;
    let with_ipam: Vec<(usize, &serde_json::Value)> = plugins
        .iter()
        .enumerate()
        .filter(|(_, p)| p.get("ipam").is_some())
        .collect();
    let (at, plugin) = match with_ipam[..] {
        [one] => one,
        [] => return Err("a conflist with no plugin that has an ipam section".into()),
        _ => {
            let at: Vec<String> = with_ipam
                .iter()
                .map(|(i, _)| format!("plugins[{i}]"))
                .collect();
            return Err(format!(
                "more than one plugin has an ipam section: {}",
                at.join(", ")
            ));
        }
    };
    let mut conf = plugin
        .as_object()
        .cloned()
        .ok_or_else(|| format!("plugins[{at}]: not an object"))?;
    for key in ["name", "cniVersion"] {
        if let Some(value) = list.get(key) {
            conf.insert(key.to_owned(), value.clone());
        }
    }
    Ok(serde_json::Value::Object(conf).to_string())
}

/// The attachments of a `--keep` file, named by the file in an error.
fn attachments(path: &Path, text: &str) -> Result<HashSet<String>, Failure> {
    gc::parse_keep(text).map_err(|(line, why)| usage(format!("{}:{line}: {why}", path.display())))
}

/// One reservation as `ipam gc --json` prints it.
#[derive(serde::Serialize)]
struct Row<'a> {
    pool: &'a str,
    address: std::net::IpAddr,
    owner: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pod: Option<&'a str>,
    leaked: bool,
    why: String,
    freed: bool,
}

fn print(judged: &[Judged], freed: &[Judged], json: bool) -> Result<(), Failure> {
    let was_freed = |j: &Judged| freed.iter().any(|f| f.pool == j.pool && f.ip == j.ip);
    if json {
        let rows: Vec<Row> = judged
            .iter()
            .map(|j| Row {
                pool: &j.pool,
                address: j.ip,
                owner: &j.record.owner,
                node: j.record.node.as_deref(),
                pod: j.record.pod.as_deref(),
                leaked: j.verdict == Verdict::Leaked,
                why: j.verdict.to_string(),
                freed: was_freed(j),
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows).map_err(usage)?);
        return Ok(());
    }
    for j in judged {
        let r = &j.record;
        let done = if was_freed(j) { " (freed)" } else { "" };
        println!(
            "{}\t{}\t{}\t{}\t{}\t{}{done}",
            j.pool,
            j.ip,
            r.owner,
            r.node.as_deref().unwrap_or("-"),
            r.pod.as_deref().unwrap_or("-"),
            j.verdict
        );
    }
    Ok(())
}

/// `ipam gc`: judges every reservation of the network for this node's runtime holding the
/// attachments of `keep`; frees the leaked ones with `free`. Exit 1 when something is leaked
/// and left (so that a script can tell), 0 otherwise.
pub fn gc(config: &Path, keep: &Path, node: Option<String>, free: bool, json: bool) -> Outcome {
    let named = |e: String| usage(format!("--config {}: {e}", config.display()));
    let text = plugin_config(&read_input(config, "--config")?).map_err(named)?;
    let conf = config::parse(text.as_bytes(), "ipam gc", config::SUPPORTED[0])
        .map_err(|e| named(e.to_string()))?;
    let keep = attachments(keep, &read_input(keep, "--keep")?)?;
    let node = gc::this_node(node);
    let Some(mut store) = store::open_existing_spec(&conf.ipam.store).map_err(store_failed)? else {
        return Ok(Status::Success);
    };
    let judged = gc::judge(store.as_mut(), &conf, &keep, &node, gc::now()).map_err(store_failed)?;
    let freed = if free {
        gc::free_leaked(store.as_mut(), &judged).map_err(store_failed)?
    } else {
        Vec::new()
    };
    print(&judged, &freed, json)?;
    let left = judged
        .iter()
        .filter(|j| j.verdict == Verdict::Leaked)
        .count()
        - freed.len();
    Ok(if left > 0 {
        Status::Failed
    } else {
        Status::Success
    })
}

#[cfg(test)]
mod tests {
    use super::plugin_config;

    #[test]
    fn a_conflist_gives_its_ipam_plugin_with_the_lists_name_and_version() {
        let list = r#"{"cniVersion":"1.0.0","name":"net","plugins":[
            {"type":"macvlan","master":"eth0","ipam":{"type":"ipam"}},{"type":"tuning"}]}"#;
        let conf: serde_json::Value = serde_json::from_str(&plugin_config(list).unwrap()).unwrap();
        assert_eq!(conf["name"], "net");
        assert_eq!(conf["cniVersion"], "1.0.0");
        assert_eq!(conf["type"], "macvlan");
        assert_eq!(conf["ipam"]["type"], "ipam");
        let single = r#"{"cniVersion":"0.3.1","name":"n","type":"bridge","ipam":{}}"#;
        assert_eq!(plugin_config(single).unwrap(), single);
        let none = r#"{"name":"n","plugins":[{"type":"bridge"}]}"#;
        assert!(plugin_config(none).unwrap_err().contains("no plugin"));
        let two = r#"{"name":"n","plugins":[{"ipam":{}},{"ipam":{}}]}"#;
        assert!(plugin_config(two)
            .unwrap_err()
            .contains("plugins[0], plugins[1]"));
        assert!(plugin_config(r#"{"plugins":7}"#).is_err());
    }
}
