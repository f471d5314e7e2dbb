//! Reading what a boot left: the agent's `@@SCHEDLAB` lines from its own serial port
//! ([`crate::guest::init_script`]) and the kernel's oops/panic reports from the console.

use serde_json::Value;

use crate::guest::MARK;

/// The counters of one repetition, from `schedlab native --json` in the guest (the counters
/// are summed over the workload's tasks, read from `/proc/<tid>/sched`).
#[derive(Clone, Debug, PartialEq)]
pub struct GuestRun {
    /// The repetition's number in its boot (warm-ups first).
    pub index: u32,
    /// The whole `schedlab native --json` object.
    pub json: Value,
    /// `/proc/schedstat` as read just before and just after the run.
    pub schedstat: Option<(Vec<String>, Vec<String>)>,
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
            index: 0,
            json: v.clone(),
            schedstat: None,
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

    /// The system-wide `/proc/schedstat` delta around this run.
    pub fn schedstat_delta(&self) -> Result<crate::schedstat::Totals, String> {
        let (before, after) = self.schedstat.as_ref().ok_or("no /proc/schedstat snapshots")?;
        crate::schedstat::delta(&crate::schedstat::parse(before)?, &crate::schedstat::parse(after)?)
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
    /// `sched/preempt` before and after the variant was applied (`none (voluntary) full`).
    pub default_preempt: Option<String>,
    pub preempt: Option<String>,
    /// The scheduler sysctls read back after the variant was applied.
    pub sysctls: Vec<(String, String)>,
    /// The cost file `schedlab calibrate` wrote in the guest, line by line.
    pub cost_lines: Vec<String>,
    /// Warm-up repetitions that finished (exit status 0).
    pub warmups_ok: u32,
    pub runs: Vec<Result<GuestRun, String>>,
    pub errors: Vec<String>,
    /// What the variant asked for and the kernel does not have (a usage error).
    pub refused: Vec<String>,
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

/// Parses one boot: `console` (the kernel's messages: oopses) and `agent` (the agent's port).
pub fn parse(console: &[String], agent: &[String]) -> Console {
    let mut c = Console { oops_at: console.iter().position(|l| is_oops(l)), ..Console::default() };
    let mut rcs: Vec<(u32, i32)> = vec![];
    let mut stderr: Vec<(u32, String)> = vec![];
    let mut schedstat: Vec<(u32, bool, String)> = vec![];
    for line in agent {
        let Some(rest) = line.strip_prefix(MARK).and_then(|r| r.strip_prefix(' ')) else { continue };
        let (key, val) = rest.split_once(' ').unwrap_or((rest, ""));
        match key {
            "release" => c.release = Some(val.to_string()),
            "online" => c.online = Some(val.to_string()),
            "default-features" => c.default_features = Some(val.trim().to_string()),
            "features" => c.features = Some(val.trim().to_string()),
            "default-preempt" => c.default_preempt = Some(val.trim().to_string()),
            "preempt" => c.preempt = Some(val.trim().to_string()),
            "sysctl" => {
                if let Some((k, v)) = val.split_once(' ') {
                    c.sysctls.push((k.to_string(), v.trim().to_string()));
                }
            }
            "cost" => c.cost_lines.push(val.to_string()),
            "error" => c.errors.push(val.to_string()),
            "refused" => c.refused.push(val.to_string()),
            "end" => c.ended = true,
            "warmup" | "run" => {
                // "run I rc RC"
                let w: Vec<&str> = val.split_whitespace().collect();
                if let [i, "rc", rc] = w[..]
                    && let (Ok(i), Ok(rc)) = (i.parse::<u32>(), rc.parse::<i32>())
                {
                    if key == "run" {
                        rcs.push((i, rc));
                    } else if rc == 0 {
                        c.warmups_ok += 1;
                    } else {
                        let why: Vec<&str> = stderr.iter().filter(|s| s.0 == i).map(|s| s.1.as_str()).collect();
                        c.errors.push(format!("warm-up run {i}: schedlab native exited {rc}: {}", why.join(" / ")));
                    }
                }
            }
            "schedstat" => {
                // "schedstat I before|after LINE"
                let mut w = val.splitn(3, ' ');
                if let (Some(i), Some(when), Some(l)) = (w.next(), w.next(), w.next())
                    && let Ok(i) = i.parse()
                {
                    schedstat.push((i, when == "before", l.to_string()));
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
                c.runs.push(run.map(|mut r| {
                    r.index = i;
                    r
                }));
            }
            _ => {}
        }
    }
    for r in c.runs.iter_mut().flatten() {
        let pick = |before: bool| -> Vec<String> {
            schedstat.iter().filter(|s| s.0 == r.index && s.1 == before).map(|s| s.2.clone()).collect()
        };
        let (before, after) = (pick(true), pick(false));
        if !before.is_empty() && !after.is_empty() {
            r.schedstat = Some((before, after));
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
        let agent = format!(
            "@@SCHEDLAB begin\n@@SCHEDLAB release 6.12.117+deb13-amd64\n@@SCHEDLAB online 0-1\n\
             @@SCHEDLAB features PLACE_LAG NO_WAKEUP_PREEMPTION \n@@SCHEDLAB preempt none (voluntary) full\n\
             @@SCHEDLAB sysctl base_slice_ns 1400000\n@@SCHEDLAB cost [costs]\n@@SCHEDLAB warmup 1 rc 0\n\
             @@SCHEDLAB run 2 rc 0\n@@SCHEDLAB json 2 {json}\n@@SCHEDLAB schedstat 2 before version 16\n\
             @@SCHEDLAB schedstat 2 after version 16\n\
             @@SCHEDLAB stderr 3 bad flag\n@@SCHEDLAB run 3 rc 2\n@@SCHEDLAB json 3 \n@@SCHEDLAB end\n"
        );
        let c = parse(&l("[    0.1] Linux version 6.12\n"), &l(&agent));
        assert_eq!(c.release.as_deref(), Some("6.12.117+deb13-amd64"));
        assert_eq!(c.online.as_deref(), Some("0-1"));
        assert_eq!(c.features.as_deref(), Some("PLACE_LAG NO_WAKEUP_PREEMPTION"));
        assert_eq!(c.preempt.as_deref(), Some("none (voluntary) full"));
        assert_eq!(c.sysctls, [("base_slice_ns".to_string(), "1400000".to_string())]);
        assert_eq!(c.cost_lines, ["[costs]"]);
        assert_eq!(c.warmups_ok, 1);
        assert!(c.ended);
        assert_eq!(c.oops_at, None);
        let r = c.runs[0].as_ref().unwrap();
        assert_eq!(r.index, 2);
        assert_eq!((r.switches, r.involuntary, r.wakeups, r.migrations, r.ops), (100, 7, Some(90), 3, 50));
        assert_eq!(r.per_op(r.switches), 2.0);
        assert_eq!(r.schedstat, Some((vec!["version 16".to_string()], vec!["version 16".to_string()])));
        assert_eq!(c.runs[1].as_ref().unwrap_err(), "schedlab native exited 2 in the guest: bad flag");
    }

    #[test]
    fn a_failed_warm_up_is_an_error_with_its_stderr() {
        let c = parse(&[], &l("@@SCHEDLAB stderr 1 no such tool\n@@SCHEDLAB warmup 1 rc 2\n@@SCHEDLAB end\n"));
        assert_eq!(c.warmups_ok, 0);
        assert_eq!(c.errors, ["warm-up run 1: schedlab native exited 2: no such tool"]);
    }

    #[test]
    fn an_oops_is_found_on_the_console() {
        let c = parse(
            &l("[   3.2] BUG: kernel NULL pointer dereference, address: 0\n[ 3.3] Oops: 0000 [#1] SMP\n"),
            &l("@@SCHEDLAB begin\n"),
        );
        assert_eq!(c.oops_at, Some(0));
        assert!(!c.ended);
        // The agent's port is not the console: text there is never taken for an oops.
        let c = parse(&[], &l("@@SCHEDLAB stderr 1 BUG: in a workload message\n@@SCHEDLAB end\n"));
        assert_eq!(c.oops_at, None);
    }
}
