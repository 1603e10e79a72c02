//! Reading the contrib systemd units the way the lab runs them: which units a role runs
//! (`contrib/roles/ROLE`, one unit a line), and for each unit its `Type=`, `EnvironmentFile=`,
//! `Environment=` and `Exec*=` command lines, the paths a `.path` unit watches, and `${VAR}`
//! expansion from the node's environment file. Only what the lab needs of systemd.exec(5) and
//! systemd.service(5); anything else in a command line (an `@` prefix, a specifier the lab
//! cannot honour, an undefined variable) is an error naming the unit file and the line, never
//! a silent guess.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::restart::{self, Restart};

/// An error in a unit, role or environment file: where, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UnitError {
    /// The file.
    pub file: PathBuf,
    /// Its line (1-based; 0 for the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
        }
    }
}

fn error(file: &Path, line: usize, message: impl Into<String>) -> UnitError {
    UnitError {
        file: file.to_path_buf(),
        line,
        message: message.into(),
    }
}

fn read(file: &Path) -> Result<String, UnitError> {
    std::fs::read_to_string(file).map_err(|e| error(file, 0, e.to_string()))
}

/// One command line of a unit (`ExecStart=` and friends), split into words but not expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    /// The unit file.
    pub file: PathBuf,
    /// Its line.
    pub line: usize,
    /// A `-` prefix: a failure is not an error.
    pub ignore_failure: bool,
    /// A `:` prefix: no variable expansion.
    pub verbatim: bool,
    /// The program and its arguments, as written.
    pub words: Vec<String>,
}

/// A unit file, as far as the lab runs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unit {
    /// Its file.
    pub file: PathBuf,
    /// Its name (`ipi-vrrpd.service`).
    pub name: String,
    /// `Type=` of a service (`simple` when unset).
    pub kind: String,
    /// `EnvironmentFile=`: the path, and whether it may be missing (a `-` prefix).
    pub environment_files: Vec<(PathBuf, bool)>,
    /// `Environment=` assignments.
    pub environment: Vec<(String, String)>,
    /// `ExecStartPre=`.
    pub exec_start_pre: Vec<Exec>,
    /// `ExecStart=`.
    pub exec_start: Vec<Exec>,
    /// `ExecStartPost=`.
    pub exec_start_post: Vec<Exec>,
    /// `ExecReload=`.
    pub exec_reload: Vec<Exec>,
    /// `ExecStopPost=`: run once the main process has ended, however it ended.
    pub exec_stop_post: Vec<Exec>,
    /// A `.path` unit's `PathChanged=` / `PathModified=` paths.
    pub watches: Vec<PathBuf>,
    /// A `.path` unit's `Unit=` (the service of the same name when unset).
    pub activates: Option<String>,
    /// `RuntimeDirectory=`: directories under /run created before the service starts.
    pub runtime_directories: Vec<String>,
    /// `ConditionPathExists=`: the path, and whether it is negated (`!`).
    pub conditions: Vec<(PathBuf, bool)>,
    /// `[Install] Also=`: units enabled with this one (a service's `.path` unit).
    pub also: Vec<String>,
    /// `After=`: units this one starts after, when both start.
    pub after: Vec<String>,
    /// `Before=`: units this one starts before, when both start.
    pub before: Vec<String>,
    /// `Restart=` and the settings that go with it.
    pub restart: Restart,
}

impl Unit {
    /// Reads and parses a unit file.
    pub fn read(file: &Path) -> Result<Unit, UnitError> {
        Unit::parse(file, &read(file)?)
    }

    /// Parses a unit file's text (`file` names it in errors).
    pub fn parse(file: &Path, text: &str) -> Result<Unit, UnitError> {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut unit = Unit {
            file: file.to_path_buf(),
            name,
            kind: "simple".to_string(),
            ..Unit::default()
        };
        for Setting {
            section,
            key,
            value,
            line,
        } in settings(file, text)?
        {
            let (key, value, line) = (key.as_str(), value.as_str(), line);
            let exec = || exec(file, line, value);
            match (section.as_str(), key) {
                ("Service", "Type") => unit.kind = value.to_string(),
                ("Service", "EnvironmentFile") => {
                    let (optional, path) = match value.strip_prefix('-') {
                        Some(p) => (true, p),
                        None => (false, value),
                    };
                    unit.environment_files.push((PathBuf::from(path), optional));
                }
                ("Service", "Environment") => {
                    for word in split(value).map_err(|m| error(file, line, m))? {
                        let Some((k, v)) = word.split_once('=') else {
                            return Err(error(file, line, format!("not `NAME=value`: {word}")));
                        };
                        unit.environment.push((k.to_string(), v.to_string()));
                    }
                }
                ("Service", "ExecStartPre") => unit.exec_start_pre.push(exec()?),
                ("Service", "ExecStart") => unit.exec_start.push(exec()?),
                ("Service", "ExecStartPost") => unit.exec_start_post.push(exec()?),
                ("Service", "ExecReload") => unit.exec_reload.push(exec()?),
                ("Service", "ExecStopPost") => unit.exec_stop_post.push(exec()?),
                ("Path", "PathChanged" | "PathModified") => {
                    unit.watches.push(PathBuf::from(value));
                }
                ("Path", "Unit") => unit.activates = Some(value.to_string()),
                ("Service", "RuntimeDirectory") => unit
                    .runtime_directories
                    .extend(value.split_whitespace().map(str::to_string)),
                ("Unit", "ConditionPathExists") => {
                    let (negated, path) = match value.strip_prefix('!') {
                        Some(p) => (true, p),
                        None => (false, value),
                    };
                    unit.conditions.push((PathBuf::from(path), negated));
                }
                ("Unit", "After") => unit
                    .after
                    .extend(value.split_whitespace().map(str::to_string)),
                ("Unit", "Before") => unit
                    .before
                    .extend(value.split_whitespace().map(str::to_string)),
                (s, k) if restart::KEYS.contains(&(s, k)) => {
                    unit.restart
                        .set(k, value)
                        .map_err(|m| error(file, line, m))?;
                }
                ("Install", "Also") => unit
                    .also
                    .extend(value.split_whitespace().map(str::to_string)),
                // Everything else (dependencies, hardening, [Install]) is
                // systemd's business, not what runs.
                _ => {}
            }
        }
        Ok(unit)
    }

    /// The environment its commands see: `node` (the host's environment files' contents,
    /// by path) then `Environment=`.
    pub fn env(
        &self,
        files: &dyn Fn(&Path) -> Option<PathBuf>,
    ) -> Result<BTreeMap<String, String>, UnitError> {
        let mut env = BTreeMap::new();
        for (path, optional) in &self.environment_files {
            let Some(real) = files(path) else {
                if *optional {
                    continue;
                }
                return Err(error(
                    &self.file,
                    0,
                    format!(
                        "EnvironmentFile={} is not provided in the lab",
                        path.display()
                    ),
                ));
            };
            match std::fs::read_to_string(&real) {
                Ok(text) => env.extend(environment_file(&real, &text)?),
                Err(_) if *optional => {}
                Err(e) => return Err(error(&real, 0, e.to_string())),
            }
        }
        env.extend(self.environment.iter().cloned());
        Ok(env)
    }
}

/// The units a role runs: `contrib/roles/ROLE`, one unit name a line (`#` comments); a name
/// without a suffix is a `.service`.
pub fn role(file: &Path) -> Result<Vec<String>, UnitError> {
    Ok(role_units(&read(file)?))
}

fn role_units(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            if l.ends_with(".service") || l.ends_with(".path") {
                l.to_string()
            } else {
                format!("{l}.service")
            }
        })
        .collect()
}

/// One `Key=value` setting of a unit file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The `[Section]` it is in.
    pub section: String,
    /// Its key.
    pub key: String,
    /// Its value, trimmed.
    pub value: String,
    /// The line it starts on.
    pub line: usize,
}

/// Every setting of a unit file's text, in order, continued lines joined, comments left out
/// (`file` names it in errors).
pub fn settings(file: &Path, text: &str) -> Result<Vec<Setting>, UnitError> {
    let mut section = String::new();
    let mut out = Vec::new();
    for (line, text) in logical_lines(text) {
        if let Some(s) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            section = s.to_string();
            continue;
        }
        let Some((key, value)) = text.split_once('=') else {
            return Err(error(file, line, format!("not `Key=value`: {text}")));
        };
        out.push(Setting {
            section: section.clone(),
            key: key.trim().to_string(),
            value: value.trim().to_string(),
            line,
        });
    }
    Ok(out)
}

/// The order in which systemd would start `units` together (indices into it): a unit after
/// those it names in `After=` and those naming it in `Before=`, otherwise as listed. A cycle
/// is an error naming one of its units.
pub fn start_order(units: &[Unit]) -> Result<Vec<usize>, UnitError> {
    let waits_for = |i: usize, j: usize| {
        i != j
            && (units[i].after.contains(&units[j].name) || units[j].before.contains(&units[i].name))
    };
    let mut done = vec![false; units.len()];
    let mut order = Vec::new();
    while order.len() < units.len() {
        let next = (0..units.len())
            .find(|&i| !done[i] && (0..units.len()).all(|j| done[j] || !waits_for(i, j)));
        let Some(i) = next else {
            let stuck = done.iter().position(|d| !d).unwrap_or(0);
            return Err(error(
                &units[stuck].file,
                0,
                "After=/Before= ordering cycle",
            ));
        };
        done[i] = true;
        order.push(i);
    }
    Ok(order)
}

/// `KEY=VALUE` lines of an environment file (`#` and `;` comments, values optionally quoted).
pub fn environment_file(file: &Path, text: &str) -> Result<BTreeMap<String, String>, UnitError> {
    let mut env = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(error(file, n + 1, format!("not `NAME=value`: {line}")));
        };
        let v = v.trim();
        let v = [('"', '"'), ('\'', '\'')]
            .iter()
            .find_map(|(a, b)| v.strip_prefix(*a).and_then(|v| v.strip_suffix(*b)))
            .unwrap_or(v);
        env.insert(k.trim().to_string(), v.to_string());
    }
    Ok(env)
}

impl Exec {
    /// The command with `${VAR}` (one word) and `$VAR` (split at whitespace) expanded from
    /// `env`, `$$` as `$`, and the specifiers `%%`, `%n` (the unit's name) and `%t` (/run).
    pub fn expand(
        &self,
        unit: &str,
        env: &BTreeMap<String, String>,
    ) -> Result<Vec<String>, UnitError> {
        let mut out = Vec::new();
        for word in &self.words {
            let word = self.specifiers(word, unit)?;
            if self.verbatim {
                out.push(word);
                continue;
            }
            if let Some(name) = word.strip_prefix('$').filter(|n| is_name(n)) {
                out.extend(
                    self.lookup(name, env)?
                        .split_whitespace()
                        .map(str::to_string),
                );
                continue;
            }
            out.push(self.braces(&word, env)?);
        }
        Ok(out)
    }

    fn lookup<'a>(
        &self,
        name: &str,
        env: &'a BTreeMap<String, String>,
    ) -> Result<&'a str, UnitError> {
        env.get(name).map(String::as_str).ok_or_else(|| {
            error(
                &self.file,
                self.line,
                format!(
                    "${{{name}}} is not defined by the unit's EnvironmentFile= or Environment="
                ),
            )
        })
    }

    fn braces(&self, word: &str, env: &BTreeMap<String, String>) -> Result<String, UnitError> {
        let mut out = String::new();
        let mut rest = word;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            if let Some(tail) = after.strip_prefix('$') {
                out.push('$');
                rest = tail;
            } else if let Some((name, tail)) =
                after.strip_prefix('{').and_then(|a| a.split_once('}'))
            {
                out.push_str(self.lookup(name, env)?);
                rest = tail;
            } else {
                return Err(error(
                    &self.file,
                    self.line,
                    format!("`$` inside `{word}`: only ${{VAR}} expands inside a word"),
                ));
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    fn specifiers(&self, word: &str, unit: &str) -> Result<String, UnitError> {
        let mut out = String::new();
        let mut chars = word.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('%') => out.push('%'),
                Some('n') => out.push_str(unit),
                Some('t') => out.push_str("/run"),
                other => {
                    return Err(error(
                        &self.file,
                        self.line,
                        format!(
                            "specifier %{} in `{word}`: the lab knows %%, %n and %t",
                            other.map(String::from).unwrap_or_default()
                        ),
                    ))
                }
            }
        }
        Ok(out)
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An `Exec*=` value: prefixes, then words.
fn exec(file: &Path, line: usize, value: &str) -> Result<Exec, UnitError> {
    let mut words = split(value).map_err(|m| error(file, line, m))?;
    let Some(first) = words.first_mut() else {
        return Err(error(file, line, "an empty command"));
    };
    let program = first.trim_start_matches(['-', '@', ':', '+', '!']);
    let prefixes = first[..first.len() - program.len()].to_string();
    if prefixes.contains('@') {
        return Err(error(
            file,
            line,
            "the `@` prefix (argv[0] of its own) is not supported in the lab",
        ));
    }
    *first = program.to_string();
    if !first.starts_with('/') && !first.starts_with('$') {
        return Err(error(
            file,
            line,
            format!("`{first}`: the lab runs absolute paths only"),
        ));
    }
    Ok(Exec {
        file: file.to_path_buf(),
        line,
        ignore_failure: prefixes.contains('-'),
        verbatim: prefixes.contains(':'),
        words,
    })
}

/// Words separated by whitespace; single and double quotes group, a backslash escapes the
/// next character (systemd.syntax(7) "Quoting").
fn split(value: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' | '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        None => return Err(format!("unterminated {c}quote{c} in: {value}")),
                        Some(q) if q == c => break,
                        Some('\\') if c == '"' => w.extend(chars.next()),
                        Some(other) => w.push(other),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// Lines with their numbers, comments and blank lines skipped, a trailing backslash joining
/// the next line (numbered as the first).
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (n, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if pending.is_none()
            && (trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';'))
        {
            continue;
        }
        let (start, mut acc) = pending.take().unwrap_or((n + 1, String::new()));
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                acc.push_str(head);
                acc.push(' ');
                pending = Some((start, acc));
            }
            None => {
                acc.push_str(trimmed);
                out.push((start, acc));
            }
        }
    }
    out.extend(pending);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const SERVICE: &str = "\
[Unit]
Description=VRRP
# a comment
ConditionPathExists=!/run/x

[Service]
Type=notify
EnvironmentFile=/etc/ipi-net/node.env
EnvironmentFile=-/etc/ipi-net/extra.env
Environment=\"STATE=/run/ipi-net/vrrpd\" MODE=x
ExecStartPre=-/bin/mkdir -p ${STATE}
ExecStart=/usr/bin/vrrpd run --cluster /etc/ipi-net/install-config.yaml \\
    --role ${IPI_ROLE} --interface ${IPI_INTERFACE} --state-dir ${STATE}
ExecReload=/bin/kill -HUP $MAINPID
";

    fn env() -> BTreeMap<String, String> {
        [
            ("IPI_ROLE", "master"),
            ("IPI_INTERFACE", "eth0"),
            ("STATE", "/run/ipi-net/vrrpd"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn a_service_is_read_and_its_command_expanded() {
        let u = Unit::parse(Path::new("ipi-vrrpd.service"), SERVICE).unwrap();
        assert_eq!(u.kind, "notify");
        assert_eq!(
            u.environment_files,
            vec![
                (PathBuf::from("/etc/ipi-net/node.env"), false),
                (PathBuf::from("/etc/ipi-net/extra.env"), true)
            ]
        );
        assert_eq!(
            u.environment[0],
            ("STATE".into(), "/run/ipi-net/vrrpd".into())
        );
        assert!(u.exec_start_pre[0].ignore_failure);
        let start = &u.exec_start[0];
        assert_eq!(start.line, 12, "a continued line is numbered as its first");
        assert_eq!(u.conditions, [(PathBuf::from("/run/x"), true)]);
        assert_eq!(
            start.expand("ipi-vrrpd.service", &env()).unwrap().join(" "),
            "/usr/bin/vrrpd run --cluster /etc/ipi-net/install-config.yaml --role master \
             --interface eth0 --state-dir /run/ipi-net/vrrpd"
        );
        let mut e = env();
        e.insert("MAINPID".into(), "42".into());
        assert_eq!(
            u.exec_reload[0].expand("x", &e).unwrap(),
            ["/bin/kill", "-HUP", "42"]
        );
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let u = Unit::parse(Path::new("u.service"), SERVICE).unwrap();
        let err = u.exec_start[0].expand("u", &BTreeMap::new()).unwrap_err();
        assert_eq!(err.to_string().split(": ").next(), Some("u.service:12"));
        assert!(err.message.contains("${IPI_ROLE}"), "{err}");
        let err =
            Unit::parse(Path::new("u.service"), "[Service]\nExecStart=vrrpd run\n").unwrap_err();
        assert_eq!((err.line, err.message.contains("absolute")), (2, true));
        let err =
            Unit::parse(Path::new("u.service"), "[Service]\nExecStart=@/bin/x y\n").unwrap_err();
        assert!(err.to_string().starts_with("u.service:2: "), "{err}");
        let err = Unit::parse(Path::new("u.service"), "[Service]\nnonsense\n").unwrap_err();
        assert_eq!(err.line, 2);
        let u = Unit::parse(Path::new("u.service"), "[Service]\nExecStart=/bin/x %i\n").unwrap();
        assert!(u.exec_start[0]
            .expand("u", &env())
            .unwrap_err()
            .message
            .contains("%i"));
    }

    #[test]
    fn quoting_specifiers_and_dollars() {
        let u = Unit::parse(
            Path::new("d.service"),
            "[Service]\nExecStart=:/bin/sh -c 'echo \"$$x\" ${A}' %n %% %t/x\n",
        )
        .unwrap();
        let e = u.exec_start[0].expand("d.service", &env()).unwrap();
        assert_eq!(
            e,
            [
                "/bin/sh",
                "-c",
                "echo \"$$x\" ${A}",
                "d.service",
                "%",
                "/run/x"
            ]
        );
        let u = Unit::parse(
            Path::new("d.service"),
            "[Service]\nExecStart=/bin/echo a${IPI_ROLE}b a$${IPI_ROLE}b\n",
        )
        .unwrap();
        let e = u.exec_start[0].expand("d", &env()).unwrap();
        assert_eq!(e[1..], ["amasterb", "a${IPI_ROLE}b"]);
    }

    #[test]
    fn units_start_after_what_they_name() {
        let unit = |name: &str, text: &str| Unit::parse(Path::new(name), text).unwrap();
        let units = [
            unit("ipi-vrrpd.service", "[Unit]\nAfter=network-online.target\n"),
            unit(
                "ipi-lb-proxy.service",
                "[Unit]\nAfter=network-online.target ipi-mdns-browse.service\n",
            ),
            unit("ipi-mdns-publish.service", ""),
            unit("ipi-mdns-browse.service", ""),
            unit(
                "ipi-dnsmasq.service",
                "[Unit]\nAfter=ipi-dns-render.service\n",
            ),
            unit(
                "ipi-dns-render.service",
                "[Unit]\nBefore=ipi-lb-proxy.service\n",
            ),
        ];
        assert_eq!(start_order(&units).unwrap(), [0, 2, 3, 5, 1, 4]);
        let cycle = [
            unit("a.service", "[Unit]\nAfter=b.service\n"),
            unit("b.service", "[Unit]\nAfter=a.service\n"),
        ];
        assert!(start_order(&cycle).unwrap_err().message.contains("cycle"));
    }

    #[test]
    fn path_units_roles_and_environment_files() {
        let p = Unit::parse(
            Path::new("ipi-dns-render.path"),
            "[Path]\nPathChanged=/run/ipi-net/inventory/nodes\n[Install]\nWantedBy=multi-user.target\n",
        )
        .unwrap();
        let s = Unit::parse(
            Path::new("ipi-dns-render.service"),
            "[Service]\nType=oneshot\nRuntimeDirectory=ipi-net/dns keepalived\n\
             [Install]\nAlso=ipi-dns-render.path\n",
        )
        .unwrap();
        assert_eq!(s.runtime_directories, ["ipi-net/dns", "keepalived"]);
        assert_eq!(s.also, ["ipi-dns-render.path"]);
        assert_eq!(p.watches, [PathBuf::from("/run/ipi-net/inventory/nodes")]);
        assert_eq!(p.activates, None);
        let env = environment_file(
            Path::new("node.env"),
            "# node\nIPI_ROLE=master\nIPI_HOSTNAME=\"master-0\"\n\nIPI_NODE_IP='192.0.2.2'\n",
        )
        .unwrap();
        assert_eq!(env["IPI_HOSTNAME"], "master-0");
        assert_eq!(env["IPI_NODE_IP"], "192.0.2.2");
        assert_eq!(environment_file(Path::new("n"), "x\n").unwrap_err().line, 1);
        assert_eq!(
            role_units(
                "# worker\nipi-vrrpd.service\nipi-dns-render.path  # re-render\nipi-dnsmasq\n"
            ),
            [
                "ipi-vrrpd.service",
                "ipi-dns-render.path",
                "ipi-dnsmasq.service"
            ]
        );
    }
}
