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
    /// The run's ftrace capture (`--trace`): its text and the events the guest's buffer lost
    /// (overruns and drops, summed over vCPUs); `Err` when it did not arrive whole.
    pub trace: Option<Result<native::ftrace::Captured, String>>,
}

impl GuestRun {
    pub fn from_json(v: &Value) -> Result<GuestRun, String> {
        let c = &v["counters"];
        let u = |x: &Value, k: &str| x[k].as_u64().ok_or_else(|| format!("no {k} in the guest's JSON"));
        let switches = u(c, "nr_switches")?;
        // `native.ops` is null for a benchmark that defines no operation count of its own
        // (lat_ctx, netperf, stress-ng, ...): `schedlab native` and `validate` count those per
        // context switch (`"op": "switch"`), and so does the per-op table here.
        let native = &v["native"];
        let ops = match native.get("ops") {
            Some(Value::Null) if native["op"].as_str() == Some("switch") => switches,
            _ => u(native, "ops")?,
        };
        Ok(GuestRun {
            index: 0,
            json: v.clone(),
            schedstat: None,
            ops,
            op: native["op"].as_str().unwrap_or("op").to_string(),
            switches,
            involuntary: u(c, "nr_involuntary_switches")?,
            wakeups: c["nr_wakeups"].as_u64(),
            migrations: u(c, "nr_migrations")?,
            metric_name: v["metric"]["name"].as_str().unwrap_or("value").to_string(),
            metric: v["metric"]["value"].as_f64().ok_or("no metric.value in the guest's JSON")?,
            trace: None,
        })
    }

    /// What ran and how its tasks were read, from `schedlab native`'s JSON: `rt-tests
    /// hackbench ...; counters exact: ...` for a real tool, `built-in workers` otherwise.
    pub fn runner(&self) -> String {
        let n = &self.json["native"];
        let ran = n["runner"].as_str().unwrap_or("built-in workers").to_string();
        match n["counters"]["read"].as_str() {
            Some("exit-trap") => format!(
                "{ran}, every task read at its exit by a seccomp exit trap ({} exits), the tool as a zombie",
                n["counters"]["exits"].as_u64().unwrap_or(0)
            ),
            Some(_) => format!("{ran}, tasks sampled every 2 ms: {}", n["counters"]["why"].as_str().unwrap_or("?")),
            None => ran,
        }
    }

    /// Why a real tool's tasks were only sampled (no exit trap in the guest), if they were.
    pub fn sampled(&self) -> Option<String> {
        let c = &self.json["native"]["counters"];
        (c["read"].as_str() == Some("sampled")).then(|| c["why"].as_str().unwrap_or("?").to_string())
    }

    /// The system-wide `/proc/schedstat` delta around this run.
    pub fn schedstat_delta(&self) -> Result<crate::schedstat::Totals, String> {
        let (before, after) = self.schedstat.as_ref().ok_or("no /proc/schedstat snapshots")?;
        crate::schedstat::delta(&crate::schedstat::parse(before)?, &crate::schedstat::parse(after)?)
    }

    pub fn per_op(&self, n: u64) -> f64 {
        n as f64 / self.ops.max(1) as f64
    }

    /// The run's ftrace capture analysed by `schedlab analyze`'s reader and analysis
    /// ([`native::trace::analyze_capture`], as `schedlab native --trace` does on a host): the
    /// workload's tasks (by the names the guest reported for them) over its measured interval
    /// (the guest's CLOCK_MONOTONIC, the trace clock the agent set). `None` when untraced.
    pub fn trace_analysis(&self) -> Option<Result<schedtrace::Analysis, String>> {
        let cap = match self.trace.as_ref()? {
            Ok(c) => c,
            Err(e) => return Some(Err(e.clone())),
        };
        let n = &self.json["native"];
        let (Some(start), Some(end)) = (n["start_mono_ns"].as_u64(), n["end_mono_ns"].as_u64()) else {
            return Some(Err("the guest's JSON has no start_mono_ns/end_mono_ns for its trace".into()));
        };
        let mut comms: Vec<&str> =
            self.json["tasks"].as_array().into_iter().flatten().filter_map(|t| t["comm"].as_str()).collect();
        comms.sort_unstable();
        comms.dedup();
        Some(native::trace::analyze_capture(cap, &comms, start, end))
    }
}

/// Decodes standard base64 (RFC 4648 with padding; whitespace ignored), as busybox `base64`
/// writes it.
pub fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !bytes.len().is_multiple_of(4) {
        return Err(format!("base64: {} characters, not a multiple of 4", bytes.len()));
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (i, q) in bytes.chunks(4).enumerate() {
        let last = i + 1 == bytes.len() / 4;
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return Err("base64: padding inside the text".into());
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = n << 6 | val(c).ok_or_else(|| format!("base64: unexpected character {:?}", c as char))?;
        }
        n <<= 6 * pad as u32;
        let b = n.to_be_bytes();
        out.extend_from_slice(&b[1..4 - pad]);
    }
    Ok(out)
}

/// The capture from its gzipped, base64-encoded lines.
fn decode_trace(b64: &str, lost: Option<u64>) -> Result<native::ftrace::Captured, String> {
    use std::io::Read as _;
    let gz = base64_decode(b64)?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .map_err(|e| format!("the guest's trace did not arrive whole ({} bytes gzipped): {e}", gz.len()))?;
    Ok(native::ftrace::Captured { text, dropped: lost.unwrap_or(0), overrun: 0 })
}

/// Everything one boot reported.
#[derive(Debug, Default)]
pub struct Console {
    /// What the agent reports for the user without failing (`note TEXT`).
    pub notes: Vec<String>,
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
    /// `(cpu, domain index, name)` from `/sys/kernel/debug/sched/domains/cpuN/domainM/name`.
    pub domain_names: Vec<(u32, u32, String)>,
    /// `(cpu, domain index, span)` from the `domainM` lines of `/proc/schedstat`.
    pub domain_spans: Vec<(u32, u32, Vec<u32>)>,
    /// `(cpu, the CPUs sharing its L3)` from `cache/index3/shared_cpu_list`.
    pub llc: Vec<(u32, Vec<u32>)>,
    /// Each run's task group, as the benchmark's process read `/proc/self/autogroup` before
    /// it started (`root` when that is empty: the root task group).
    pub groups: Vec<String>,
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
    let mut traces: std::collections::BTreeMap<u32, String> = Default::default();
    let mut lost: std::collections::BTreeMap<u32, u64> = Default::default();
    let mut sd_cpu: Option<u32> = None;
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
            "note" => c.notes.push(val.to_string()),
            "group" => {
                let g = val.trim();
                c.groups.push(if g.is_empty() { "root".into() } else { g.to_string() });
            }
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
            "trace" => {
                // "trace I BASE64-LINE"
                if let Some((i, b)) = val.split_once(' ')
                    && let Ok(i) = i.parse()
                {
                    traces.entry(i).or_default().push_str(b);
                }
            }
            "sd-name" => {
                // "sd-name cpuN/domainM NAME"
                if let Some((path, name)) = val.split_once(' ')
                    && let Some((cpu, dom)) = path.split_once('/')
                    && let (Some(Ok(cpu)), Some(Ok(dom))) = (
                        cpu.strip_prefix("cpu").map(str::parse::<u32>),
                        dom.strip_prefix("domain").map(str::parse::<u32>),
                    )
                {
                    c.domain_names.push((cpu, dom, name.trim().to_string()));
                }
            }
            "sd" => {
                // "sd cpuN" then "sd domainM MASK" lines, as /proc/schedstat orders them.
                let mut w = val.split_whitespace();
                match (w.next(), w.next()) {
                    (Some(cpu), None) => sd_cpu = cpu.strip_prefix("cpu").and_then(|n| n.parse().ok()),
                    (Some(dom), Some(mask)) => {
                        if let (Some(cpu), Some(Ok(dom)), Some(span)) = (
                            sd_cpu,
                            dom.strip_prefix("domain").map(str::parse::<u32>),
                            crate::topology::parse_cpumask(mask),
                        ) {
                            c.domain_spans.push((cpu, dom, span));
                        }
                    }
                    _ => {}
                }
            }
            "llc" => {
                if let Some((cpu, l)) = val.split_once(' ')
                    && let (Ok(cpu), Some(l)) = (cpu.parse(), crate::topology::parse_cpu_list(l))
                {
                    c.llc.push((cpu, l));
                }
            }
            "trace-lost" => {
                if let Some((i, n)) = val.split_once(' ')
                    && let (Ok(i), Ok(n)) = (i.parse(), n.trim().parse())
                {
                    lost.insert(i, n);
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
        if let Some(b64) = traces.get(&r.index) {
            r.trace = Some(decode_trace(b64, lost.get(&r.index).copied()));
        } else if lost.contains_key(&r.index) {
            r.trace = Some(Err(format!("run {}: traced, but no trace text arrived", r.index)));
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

    /// lat_ctx's JSON has no operation count (`"ops": null, "op": "switch"`): its runs are
    /// counted per switch, as `schedlab native` counts them; a JSON without `ops` at all is
    /// still refused.
    #[test]
    fn a_benchmark_without_ops_is_counted_per_switch() {
        let v: Value = serde_json::from_str(
            r#"{"counters":{"nr_switches":40,"nr_involuntary_switches":4,"nr_wakeups":38,"nr_migrations":1},"native":{"ops":null,"op":"switch"},"metric":{"name":"usecs_per_switch","value":12.5}}"#,
        )
        .unwrap();
        let r = GuestRun::from_json(&v).unwrap();
        assert_eq!((r.ops, r.op.as_str()), (40, "switch"));
        assert_eq!(r.per_op(r.wakeups.unwrap()), 0.95);
        let mut bad = v.clone();
        bad["native"].as_object_mut().unwrap().remove("ops");
        assert_eq!(GuestRun::from_json(&bad).unwrap_err(), "no ops in the guest's JSON");
        bad["native"]["ops"] = Value::Null;
        bad["native"]["op"] = Value::from("message");
        assert_eq!(GuestRun::from_json(&bad).unwrap_err(), "no ops in the guest's JSON");
    }

    #[test]
    fn base64_round_trips() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVs\nbG8h").unwrap(), b"hello!");
        assert_eq!(base64_decode("aGk=").unwrap(), b"hi");
        assert!(base64_decode("aGk").is_err() && base64_decode("a=Gk").is_err() && base64_decode("a*Gk").is_err());
    }

    #[test]
    fn a_trace_arrives_in_marked_lines_and_is_analysed() {
        use std::io::Write as _;
        let text = "# tracer: nop\n\
            hackbench-10 [000] d..2. 1000.000100: sched_waking: comm=hackbench pid=11 prio=120 target_cpu=001\n\
            hackbench-10 [000] d..2. 1000.000110: sched_wakeup: comm=hackbench pid=11 prio=120 target_cpu=001\n\
            <idle>-0 [001] d..2. 1000.000150: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=hackbench next_pid=11 next_prio=120\n";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        // Standard base64, as busybox writes it, in 76-character lines.
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut b64 = String::new();
        for c in gz.chunks(3) {
            let n =
                u32::from(c[0]) << 16 | u32::from(*c.get(1).unwrap_or(&0)) << 8 | u32::from(*c.get(2).unwrap_or(&0));
            for k in 0..4 {
                b64.push(if k <= c.len() { A[(n >> (18 - 6 * k) & 63) as usize] as char } else { '=' });
            }
        }
        let json = r#"{"counters":{"nr_switches":1,"nr_involuntary_switches":0,"nr_wakeups":1,"nr_migrations":0},"native":{"ops":1,"op":"message","start_mono_ns":1000000000000,"end_mono_ns":1000001000000},"metric":{"name":"seconds","value":0.5},"tasks":[{"pid":10,"comm":"hackbench"},{"pid":11,"comm":"hackbench"}]}"#;
        let mut agent = format!("@@SCHEDLAB run 1 rc 0\n@@SCHEDLAB json 1 {json}\n@@SCHEDLAB trace-lost 1 3\n");
        for chunk in b64.as_bytes().chunks(76) {
            agent += &format!("@@SCHEDLAB trace 1 {}\n", std::str::from_utf8(chunk).unwrap());
        }
        let c = parse(&[], &l(&agent));
        let r = c.runs[0].as_ref().unwrap();
        let cap = r.trace.as_ref().unwrap().as_ref().unwrap();
        assert_eq!((cap.text.as_str(), cap.dropped), (text, 3));
        let an = r.trace_analysis().unwrap().unwrap();
        assert_eq!(an.nr_wakeups, 1);
        // Woken at 1000.000100 (sched_waking), running at 1000.000150: 50 µs (to the
        // latency histogram's bucket).
        let p50 = an.wakeup_latency_ns().p50;
        assert!((49_000..=51_000).contains(&p50), "{p50}");
        // A run that said it was traced and sent nothing is an error, not an untraced run.
        let c =
            parse(&[], &l(&format!("@@SCHEDLAB run 1 rc 0\n@@SCHEDLAB json 1 {json}\n@@SCHEDLAB trace-lost 1 0\n")));
        assert!(c.runs[0].as_ref().unwrap().trace.as_ref().unwrap().is_err());
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
