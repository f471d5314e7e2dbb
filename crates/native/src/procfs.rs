//! Per-task scheduler counters from `/proc/<pid>/sched` and `/proc/<pid>/schedstat`.
//!
//! `/proc/<pid>/sched` is the scheduler's debug dump (`proc_sched_show_task()`, kernel/sched/
//! debug.c): a header `comm (pid, #threads: n)`, a rule, then `key : value` lines whose set
//! depends on the kernel version and configuration, so it is parsed leniently into a map and
//! each counter is looked up by name (with the older `se.statistics.` prefix stripped). The
//! `nr_wakeups*` counters exist only with `CONFIG_SCHEDSTATS` and `kernel.sched_schedstats=1`;
//! they are `None` otherwise.
//!
//! `/proc/<pid>/schedstat` is three numbers (`proc_pid_schedstat()`): time on the CPU (ns), time
//! spent waiting on a runqueue (ns) and the number of timeslices run (`sched_info.pcount`).
//! It is hand-parsed too: three integers do not justify the `procfs` crate.
//!
//! Both files stay readable while a process is a zombie, so a parent can read its children's
//! final counters between their exit and their reaping (`waitid(WNOWAIT)`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The counters of one task at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskSample {
    pub pid: u32,
    pub comm: String,
    /// `prio - 120` for a fair task.
    pub nice: i32,
    pub nr_switches: u64,
    pub nr_voluntary_switches: u64,
    pub nr_involuntary_switches: u64,
    /// `se.nr_migrations`.
    pub nr_migrations: u64,
    /// `se.sum_exec_runtime` (printed in ms with 6 decimals, kept in ns).
    pub sum_exec_runtime_ns: u64,
    /// schedstat field 2: time runnable but waiting for a CPU.
    pub run_delay_ns: u64,
    /// schedstat field 3: timeslices run on a CPU.
    pub timeslices: u64,
    /// schedstats-only counters by name (`nr_wakeups`, `nr_wakeups_sync`, ...), when present.
    pub schedstats: BTreeMap<String, u64>,
}

impl TaskSample {
    /// `self - earlier` for every cumulative counter (for a task that ran before the measured
    /// interval, such as the benchmark's main thread).
    pub fn since(&self, earlier: &TaskSample) -> TaskSample {
        let mut schedstats = BTreeMap::new();
        for (k, v) in &self.schedstats {
            schedstats.insert(k.clone(), v.saturating_sub(earlier.schedstats.get(k).copied().unwrap_or(0)));
        }
        TaskSample {
            pid: self.pid,
            comm: self.comm.clone(),
            nice: self.nice,
            nr_switches: self.nr_switches.saturating_sub(earlier.nr_switches),
            nr_voluntary_switches: self.nr_voluntary_switches.saturating_sub(earlier.nr_voluntary_switches),
            nr_involuntary_switches: self.nr_involuntary_switches.saturating_sub(earlier.nr_involuntary_switches),
            nr_migrations: self.nr_migrations.saturating_sub(earlier.nr_migrations),
            sum_exec_runtime_ns: self.sum_exec_runtime_ns.saturating_sub(earlier.sum_exec_runtime_ns),
            run_delay_ns: self.run_delay_ns.saturating_sub(earlier.run_delay_ns),
            timeslices: self.timeslices.saturating_sub(earlier.timeslices),
            schedstats,
        }
    }
}

/// The schedstats counters of `/proc/<pid>/sched` that map onto the `run --json` counters.
pub const SCHEDSTAT_WAKEUP_KEYS: &[&str] = &[
    "nr_wakeups",
    "nr_wakeups_sync",
    "nr_wakeups_local",
    "nr_wakeups_remote",
    "nr_wakeups_affine",
    "nr_wakeups_affine_attempts",
    "nr_wakeups_migrate",
];

/// Parses the text of `/proc/<pid>/sched`. Unknown lines are ignored; the switch counters are
/// required (the file exists only with `CONFIG_SCHED_DEBUG`, and always has them).
pub fn parse_sched(text: &str) -> Result<TaskSample, String> {
    let mut lines = text.lines();
    let header = lines.next().ok_or("empty /proc/<pid>/sched")?;
    // `comm (pid, #threads: n)`; comm may itself contain spaces and parentheses.
    let (comm, pid) = match header.rfind(" (") {
        Some(i) => {
            let rest = &header[i + 2..];
            let pid = rest.split(|c: char| !c.is_ascii_digit()).next().and_then(|p| p.parse().ok()).unwrap_or(0);
            (header[..i].to_string(), pid)
        }
        None => (header.trim().to_string(), 0),
    };
    let mut map: BTreeMap<&str, &str> = BTreeMap::new();
    for line in lines {
        let Some((k, v)) = line.split_once(':') else { continue };
        let k = k.trim();
        let k = k.strip_prefix("se.statistics.").or_else(|| k.strip_prefix("stats.")).unwrap_or(k);
        map.insert(k, v.trim());
    }
    let int = |k: &str| -> Option<u64> { map.get(k).and_then(|v| v.parse::<i64>().ok()).map(|v| v.max(0) as u64) };
    let need = |k: &str| int(k).ok_or_else(|| format!("/proc/<pid>/sched: no `{k}` line"));
    let ms_to_ns = |v: &str| -> Option<u64> {
        // `%Ld.%06ld` milliseconds: keep the digits exact.
        let (whole, frac) = v.split_once('.').unwrap_or((v, "0"));
        let whole: u64 = whole.trim().parse().ok()?;
        let mut frac = frac.trim().to_string();
        frac.truncate(6);
        while frac.len() < 6 {
            frac.push('0');
        }
        Some(whole * 1_000_000 + frac.parse::<u64>().ok()?)
    };
    let mut schedstats = BTreeMap::new();
    for key in SCHEDSTAT_WAKEUP_KEYS {
        if let Some(v) = int(key) {
            schedstats.insert((*key).to_string(), v);
        }
    }
    Ok(TaskSample {
        pid,
        comm,
        nice: int("prio").map_or(0, |p| p as i32 - 120),
        nr_switches: need("nr_switches")?,
        nr_voluntary_switches: need("nr_voluntary_switches")?,
        nr_involuntary_switches: need("nr_involuntary_switches")?,
        nr_migrations: int("se.nr_migrations").unwrap_or(0),
        sum_exec_runtime_ns: map.get("se.sum_exec_runtime").and_then(|v| ms_to_ns(v)).unwrap_or(0),
        run_delay_ns: 0,
        timeslices: 0,
        schedstats,
    })
}

/// Parses `/proc/<pid>/schedstat`: (run time ns, run delay ns, timeslices).
pub fn parse_schedstat(text: &str) -> Result<(u64, u64, u64), String> {
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|t| t.parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("/proc/<pid>/schedstat: {e}"))?;
    match v.as_slice() {
        [a, b, c, ..] => Ok((*a, *b, *c)),
        _ => Err(format!("/proc/<pid>/schedstat: expected 3 numbers, got `{}`", text.trim())),
    }
}

/// The `/proc` directory of a task: a process (`/proc/<pid>`) or a thread of this process
/// (`/proc/self/task/<tid>`).
pub fn task_dir(pid: u32, thread_of_self: bool) -> PathBuf {
    if thread_of_self { PathBuf::from(format!("/proc/self/task/{pid}")) } else { PathBuf::from(format!("/proc/{pid}")) }
}

/// Reads both files of one task.
pub fn read_task(dir: &Path) -> Result<TaskSample, String> {
    let sched_path = dir.join("sched");
    let text = std::fs::read_to_string(&sched_path).map_err(|e| format!("{}: {e}", sched_path.display()))?;
    let mut s = parse_sched(&text).map_err(|e| format!("{}: {e}", sched_path.display()))?;
    let stat_path = dir.join("schedstat");
    let text = std::fs::read_to_string(&stat_path).map_err(|e| format!("{}: {e}", stat_path.display()))?;
    let (run, delay, slices) = parse_schedstat(&text).map_err(|e| format!("{}: {e}", stat_path.display()))?;
    // schedstat's run time is the same sum_exec_runtime at full precision.
    if run > 0 {
        s.sum_exec_runtime_ns = run;
    }
    s.run_delay_ns = delay;
    s.timeslices = slices;
    Ok(s)
}

/// Reads the calling thread's counters.
pub fn read_self_thread() -> Result<TaskSample, String> {
    read_task(Path::new("/proc/thread-self"))
}

/// Whether `/proc/<pid>/sched` shows schedstats counters (CONFIG_SCHEDSTATS and
/// `kernel.sched_schedstats` on).
pub fn schedstats_enabled() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/sched_schedstats").is_ok_and(|v| v.trim() == "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHED_6_18: &str = "\
sched-pipe (22222, #threads: 1)
-------------------------------------------------------------------
se.exec_start                                :       2785708.143647
se.vruntime                                  :           129.876845
se.sum_exec_runtime                          :             12.088362
se.nr_migrations                             :                    3
nr_switches                                  :                20001
nr_voluntary_switches                        :                19990
nr_involuntary_switches                      :                   11
se.load.weight                               :              1048576
policy                                       :                    0
prio                                         :                  120
se.slice                                     :              1400000
clock-delta                                  :                   70
current_node=0, numa_group_id=0
numa_faults node=0 task_private=0 task_shared=0 group_private=0 group_shared=0
";

    #[test]
    fn parses_sched_without_schedstats() {
        let s = parse_sched(SCHED_6_18).unwrap();
        assert_eq!(s.comm, "sched-pipe");
        assert_eq!(s.pid, 22222);
        assert_eq!(s.nr_switches, 20001);
        assert_eq!(s.nr_voluntary_switches, 19990);
        assert_eq!(s.nr_involuntary_switches, 11);
        assert_eq!(s.nr_migrations, 3);
        assert_eq!(s.sum_exec_runtime_ns, 12_088_362);
        assert_eq!(s.nice, 0);
        assert!(s.schedstats.is_empty());
    }

    #[test]
    fn parses_schedstats_lines_and_odd_comm() {
        let text = "a (b) c (7, #threads: 2)\n---\nnr_switches : 5\nnr_voluntary_switches : 4\n\
                    nr_involuntary_switches : 1\nse.statistics.nr_wakeups : 9\nnr_wakeups_sync : 8\nprio : 125\n";
        let s = parse_sched(text).unwrap();
        assert_eq!(s.comm, "a (b) c");
        assert_eq!(s.pid, 7);
        assert_eq!(s.nice, 5);
        assert_eq!(s.schedstats["nr_wakeups"], 9);
        assert_eq!(s.schedstats["nr_wakeups_sync"], 8);
        assert!(parse_sched("x (1, #threads: 1)\n---\nnr_switches : 1\n").is_err());
    }

    #[test]
    fn parses_schedstat_and_reads_self() {
        assert_eq!(parse_schedstat("1364123 1224965 2\n").unwrap(), (1364123, 1224965, 2));
        assert!(parse_schedstat("1 2").is_err());
        let me = read_self_thread().unwrap();
        assert!(me.nr_switches >= me.nr_voluntary_switches);
        let later = read_self_thread().unwrap();
        assert!(later.since(&me).sum_exec_runtime_ns < 10_000_000_000);
    }
}
