//! Reading the guest's serial console: the agent's `@@SCHEDLAB` lines
//! ([`crate::guest::init_script`]) and the kernel's oops/panic reports.

use serde_json::Value;

use crate::guest::MARK;

/// The counters of one repetition, from `schedlab native --json` in the guest (the counters
/// are summed over the workload's tasks, read from `/proc/<tid>/sched`).
#[derive(Clone, Debug, PartialEq)]
pub struct GuestRun {
    pub ops: u64,
    pub op: String,
    pub switches: u64,
    pub involuntary: u64,
    pub wakeups: Option<u64>,
    pub migrations: u64,
    pub metric_name: String,
    pub metric: f64,
}

impl GuestRun {
    pub fn from_json(v: &Value) -> Result<GuestRun, String> {
        let c = &v["counters"];
        let u = |x: &Value, k: &str| x[k].as_u64().ok_or_else(|| format!("no {k} in the guest's JSON"));
        Ok(GuestRun {
            ops: u(&v["native"], "ops")?,
            op: v["native"]["op"].as_str().unwrap_or("op").to_string(),
            switches: u(c, "nr_switches")?,
            involuntary: u(c, "nr_involuntary_switches")?,
            wakeups: c["nr_wakeups"].as_u64(),
            migrations: u(c, "nr_migrations")?,
            metric_name: v["metric"]["name"].as_str().unwrap_or("value").to_string(),
            metric: v["metric"]["value"].as_f64().ok_or("no metric.value in the guest's JSON")?,
        })
    }

    pub fn per_op(&self, n: u64) -> f64 {
        n as f64 / self.ops.max(1) as f64
    }
}

/// Everything one boot reported.
#[derive(Debug, Default)]
pub struct Console {
    pub release: Option<String>,
    pub online: Option<String>,
    pub default_features: Option<String>,
    /// The features file after the variant was applied (read back by the agent).
    pub features: Option<String>,
    pub runs: Vec<Result<GuestRun, String>>,
    pub errors: Vec<String>,
    /// Whether the agent reached its end (it prints `end` after its last run or an error).
    pub ended: bool,
    /// Index of the first line of a kernel oops, BUG or panic.
    pub oops_at: Option<usize>,
}

/// Kernel messages that mean the guest is broken (`die()`, `BUG:`, `panic()`).
fn is_oops(line: &str) -> bool {
    ["Oops:", "BUG:", "Kernel panic", "general protection fault", "invalid opcode:", "kernel BUG at"]
        .iter()
        .any(|p| line.contains(p))
}

pub fn parse(lines: &[String]) -> Console {
    let mut c = Console::default();
    let mut rcs: Vec<(u32, i32)> = vec![];
    let mut stderr: Vec<(u32, String)> = vec![];
    for (i, line) in lines.iter().enumerate() {
        if c.oops_at.is_none() && is_oops(line) {
            c.oops_at = Some(i);
        }
        let Some(rest) = line.strip_prefix(MARK).and_then(|r| r.strip_prefix(' ')) else { continue };
        let (key, val) = rest.split_once(' ').unwrap_or((rest, ""));
        match key {
            "release" => c.release = Some(val.to_string()),
            "online" => c.online = Some(val.to_string()),
            "default-features" => c.default_features = Some(val.to_string()),
            "features" => c.features = Some(val.to_string()),
            "error" => c.errors.push(val.to_string()),
            "end" => c.ended = true,
            "run" => {
                // "run I rc RC"
                let w: Vec<&str> = val.split_whitespace().collect();
                if let [i, "rc", rc] = w[..]
                    && let (Ok(i), Ok(rc)) = (i.parse(), rc.parse())
                {
                    rcs.push((i, rc));
                }
            }
            "stderr" => {
                if let Some((i, msg)) = val.split_once(' ')
                    && let Ok(i) = i.parse()
                {
                    stderr.push((i, msg.to_string()));
                }
            }
            "json" => {
                let (i, json) = val.split_once(' ').unwrap_or((val, ""));
                let i: u32 = i.parse().unwrap_or(0);
                let rc = rcs.iter().find(|r| r.0 == i).map(|r| r.1).unwrap_or(-1);
                let run = if rc != 0 {
                    let why: Vec<&str> = stderr.iter().filter(|s| s.0 == i).map(|s| s.1.as_str()).collect();
                    Err(format!("schedlab native exited {rc} in the guest: {}", why.join(" / ")))
                } else {
                    serde_json::from_str::<Value>(json)
                        .map_err(|e| format!("run {i}: unreadable JSON from the guest ({e})"))
                        .and_then(|v| GuestRun::from_json(&v))
                };
                c.runs.push(run);
            }
            _ => {}
        }
    }
    c
}

/// The last `n` console lines (for an oops or a timeout report).
pub fn tail(lines: &[String], n: usize) -> String {
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Vec<String> {
        s.lines().map(String::from).collect()
    }

    #[test]
    fn agent_lines_are_parsed() {
        let json = r#"{"counters":{"nr_switches":100,"nr_involuntary_switches":7,"nr_wakeups":90,"nr_migrations":3},"native":{"ops":50,"op":"message"},"metric":{"name":"seconds","value":0.5}}"#;
        let text = format!(
            "[    0.1] Linux version 6.12\n@@SCHEDLAB begin\n@@SCHEDLAB release 6.12.117+deb13-amd64\n@@SCHEDLAB online 0-1\n\
             @@SCHEDLAB features PLACE_LAG NO_WAKEUP_PREEMPTION\n@@SCHEDLAB run 1 rc 0\n@@SCHEDLAB json 1 {json}\n\
             @@SCHEDLAB run 2 rc 2\n@@SCHEDLAB stderr 2 bad flag\n@@SCHEDLAB json 2 \n@@SCHEDLAB end\n"
        );
        let c = parse(&l(&text));
        assert_eq!(c.release.as_deref(), Some("6.12.117+deb13-amd64"));
        assert_eq!(c.online.as_deref(), Some("0-1"));
        assert!(c.ended);
        assert_eq!(c.oops_at, None);
        let r = c.runs[0].as_ref().unwrap();
        assert_eq!((r.switches, r.involuntary, r.wakeups, r.migrations, r.ops), (100, 7, Some(90), 3, 50));
        assert_eq!(r.per_op(r.switches), 2.0);
        assert_eq!(c.runs[1].as_ref().unwrap_err(), "schedlab native exited 2 in the guest: bad flag");
    }

    #[test]
    fn an_oops_is_found() {
        let c = parse(&l(
            "@@SCHEDLAB begin\n[   3.2] BUG: kernel NULL pointer dereference, address: 0\n[ 3.3] Oops: 0000 [#1] SMP\n",
        ));
        assert_eq!(c.oops_at, Some(1));
        assert!(!c.ended);
    }
}
