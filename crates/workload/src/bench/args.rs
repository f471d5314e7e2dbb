//! Command-line parsing the way the benchmarks' own parsers do it: GNU `getopt`/`getopt_long`
//! (clusters `-Tp`, attached values `-g4`, `--name=value`, unambiguous long prefixes, operands
//! mixed with options, `--` ends options) and perf's `parse_options` (the same plus `--no-name`
//! negation of boolean options).

use super::{WorkloadError, usage};

/// One option a tool accepts (or knows and rejects).
#[derive(Clone, Copy, Debug)]
pub(crate) struct OptDef {
    /// What the caller matches on.
    pub key: &'static str,
    pub short: Option<char>,
    pub long: Option<&'static str>,
    /// The option takes a value (the next argument when not attached).
    pub value: bool,
}

pub(crate) const fn opt(key: &'static str, short: Option<char>, long: Option<&'static str>, value: bool) -> OptDef {
    OptDef { key, short, long, value }
}

/// Parser flavour.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Style {
    /// perf's `--no-<name>` for options without a value.
    pub negation: bool,
    /// Long names must be spelled in full (the option table holds only part of the tool's
    /// options, so a prefix unambiguous here may be ambiguous in the tool).
    pub exact_long: bool,
}

/// An option as found on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub key: &'static str,
    /// As the user wrote it: `-g` or `--groups` (for messages).
    pub flag: String,
    pub value: Option<String>,
    /// `--no-<name>` was given.
    pub negated: bool,
}

impl Found {
    /// The option's value (present for every option defined with `value: true`).
    pub(crate) fn val(&self) -> &str {
        self.value.as_deref().unwrap_or("")
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Parsed {
    pub opts: Vec<Found>,
    pub operands: Vec<String>,
}

/// Parses `argv` (without the program name) against `defs`.
pub(crate) fn getopt(
    bench: &'static str,
    argv: &[String],
    defs: &[OptDef],
    style: Style,
) -> Result<Parsed, WorkloadError> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < argv.len() {
        let arg = &argv[i];
        i += 1;
        if arg == "--" {
            out.operands.extend(argv[i..].iter().cloned());
            break;
        }
        if let Some(body) = arg.strip_prefix("--") {
            let (name, attached) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (body, None),
            };
            let (def, negated) = match find_long(bench, defs, name, style.exact_long)? {
                Some(d) => (d, false),
                None => match name.strip_prefix("no-").filter(|_| style.negation) {
                    Some(plain) => match find_long(bench, defs, plain, style.exact_long)? {
                        Some(d) if !d.value => (d, true),
                        _ => return usage(bench, format!("unrecognized option '--{name}'")),
                    },
                    None => return usage(bench, format!("unrecognized option '--{name}'")),
                },
            };
            let long = def.long.unwrap_or(name);
            let value = if def.value && !negated {
                match attached {
                    Some(v) => Some(v),
                    None if i < argv.len() => {
                        i += 1;
                        Some(argv[i - 1].clone())
                    }
                    None => return usage(bench, format!("option '--{long}' requires an argument")),
                }
            } else {
                if attached.is_some() {
                    return usage(bench, format!("option '--{long}' doesn't allow an argument"));
                }
                None
            };
            let flag = if negated { format!("--no-{long}") } else { format!("--{long}") };
            out.opts.push(Found { key: def.key, flag, value, negated });
        } else if arg.len() > 1 && arg.starts_with('-') {
            let chars: Vec<char> = arg[1..].chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let Some(def) = defs.iter().find(|d| d.short == Some(c)) else {
                    return usage(bench, format!("invalid option -- '{c}'"));
                };
                let flag = format!("-{c}");
                if def.value {
                    let value = if j < chars.len() {
                        let v: String = chars[j..].iter().collect();
                        j = chars.len();
                        v
                    } else if i < argv.len() {
                        i += 1;
                        argv[i - 1].clone()
                    } else {
                        return usage(bench, format!("option requires an argument -- '{c}'"));
                    };
                    out.opts.push(Found { key: def.key, flag, value: Some(value), negated: false });
                } else {
                    out.opts.push(Found { key: def.key, flag, value: None, negated: false });
                }
            }
        } else {
            out.operands.push(arg.clone());
        }
    }
    Ok(out)
}

/// An exact long name, else the only option whose long name starts with `name`.
fn find_long<'a>(
    bench: &'static str,
    defs: &'a [OptDef],
    name: &str,
    exact: bool,
) -> Result<Option<&'a OptDef>, WorkloadError> {
    if name.is_empty() {
        return Ok(None);
    }
    if let Some(d) = defs.iter().find(|d| d.long == Some(name)) {
        return Ok(Some(d));
    }
    if exact {
        return Ok(None);
    }
    let matches: Vec<&OptDef> = defs.iter().filter(|d| d.long.is_some_and(|l| l.starts_with(name))).collect();
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        many => {
            let list: Vec<String> = many.iter().map(|d| format!("'--{}'", d.long.unwrap_or(""))).collect();
            usage(bench, format!("option '--{name}' is ambiguous; possibilities: {}", list.join(" ")))
        }
    }
}

/// A decimal integer (optional sign), as the tools' `atoi`/`strtol` callers expect; trailing
/// garbage is an error here rather than silently dropped.
pub(crate) fn int(bench: &'static str, flag: &str, s: &str) -> Result<i64, WorkloadError> {
    let t = s.trim();
    match t.parse::<i64>() {
        Ok(v) => Ok(v),
        Err(_) => usage(bench, format!("{flag}: `{s}` is not an integer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFS: &[OptDef] = &[
        opt("pipe", Some('p'), Some("pipe"), false),
        opt("groups", Some('g'), Some("groups"), true),
        opt("processes", Some('P'), Some("processes"), false),
        opt("threads", Some('T'), Some("threads"), false),
    ];

    fn sv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn getopt_forms() {
        let p = getopt(
            "t",
            &sv(&["-Tpg4", "x", "--groups=5", "--process", "--gr", "6", "--", "-p"]),
            DEFS,
            Style::default(),
        )
        .unwrap();
        let keys: Vec<_> = p.opts.iter().map(|f| (f.key, f.value.clone())).collect();
        assert_eq!(
            keys,
            [
                ("threads", None),
                ("pipe", None),
                ("groups", Some("4".into())),
                ("groups", Some("5".into())),
                ("processes", None),
                ("groups", Some("6".into())),
            ]
        );
        assert_eq!(p.operands, ["x", "-p"]);
    }

    #[test]
    fn getopt_errors() {
        assert!(getopt("t", &sv(&["-q"]), DEFS, Style::default()).is_err());
        assert!(getopt("t", &sv(&["-g"]), DEFS, Style::default()).is_err());
        assert!(getopt("t", &sv(&["--p"]), DEFS, Style::default()).unwrap_err().to_string().contains("ambiguous"));
        assert!(getopt("t", &sv(&["--no-pipe"]), DEFS, Style::default()).is_err());
        let p = getopt("t", &sv(&["--no-pipe"]), DEFS, Style { negation: true, exact_long: false }).unwrap();
        assert!(p.opts[0].negated);
    }
}
