//! `perf bench sched messaging` (workloads.md §2): hackbench as ported to perf, with 20 fds per
//! group and 100-byte messages fixed. The task structure and model are hackbench's
//! ([`super::hackbench`]); only the flags and the output differ. Tasks are named
//! `sched-messaging`, the name `perf bench` gives itself (`prctl(PR_SET_NAME)`).
//!
//! Flags (perf `parse_options`: `-g4`, `--group=4`, unambiguous prefixes, `--no-pipe`):
//! `-p/--pipe`, `-t/--thread`, `-g/--group N` (10), `-l/--nr_loops N` (100). perf's global
//! `-f simple` format comes before the collection name and is not part of this command line.

use super::args::{OptDef, Style, getopt, int, opt};
use super::hackbench::{MARK_END, MARK_START, Transport, build_groups};
use super::{BenchParams, Better, Built, MetricSpec, View, WorkloadError, secs_msecs, usage};

const BENCH: &str = "messaging";
/// `num_fds` in `bench_sched_messaging()`.
pub const FDS: u32 = 20;
/// `DATASIZE`.
pub const DATASIZE: u32 = 100;

/// perf bench sched messaging flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Messaging {
    /// `-g/--group` (10).
    pub groups: u32,
    /// `-l/--nr_loops` (100).
    pub loops: u32,
    /// `-p/--pipe`: pipes instead of unix socketpairs.
    pub pipe: bool,
    /// `-t/--thread`: threads instead of processes.
    pub threads: bool,
}

impl Default for Messaging {
    fn default() -> Self {
        Messaging { groups: 10, loops: 100, pipe: false, threads: false }
    }
}

const OPTS: &[OptDef] = &[
    opt("pipe", Some('p'), Some("pipe"), false),
    opt("thread", Some('t'), Some("thread"), false),
    opt("group", Some('g'), Some("group"), true),
    opt("nr_loops", Some('l'), Some("nr_loops"), true),
];

/// perf's `OPT_UINTEGER`.
fn uint(flag: &str, s: &str) -> Result<u32, WorkloadError> {
    let v = int(BENCH, flag, s)?;
    if !(0..=i64::from(u32::MAX)).contains(&v) {
        return usage(BENCH, format!("option `{}' expects an unsigned numerical value", flag.trim_start_matches('-')));
    }
    Ok(v as u32)
}

pub(crate) fn parse(argv: &[String]) -> Result<Built, WorkloadError> {
    let parsed = getopt(BENCH, argv, OPTS, Style { negation: true, exact_long: false })?;
    let mut m = Messaging::default();
    for f in &parsed.opts {
        match f.key {
            "pipe" => m.pipe = !f.negated,
            "thread" => m.threads = !f.negated,
            "group" => m.groups = uint(&f.flag, f.val())?,
            "nr_loops" => m.loops = uint(&f.flag, f.val())?,
            _ => unreachable!("option table"),
        }
    }
    if let Some(op) = parsed.operands.first() {
        return usage(BENCH, format!("unexpected argument `{op}`"));
    }
    let transport = if m.pipe { Transport::Pipe } else { Transport::UnixStream };
    let (tasks, objects) =
        build_groups(BENCH, "sched-messaging", m.groups, FDS, u64::from(m.loops), DATASIZE, m.threads, transport)?;
    Ok(Built {
        name: BENCH,
        tasks,
        objects,
        duration_ns: None,
        metric: MetricSpec { name: "seconds", better: Better::Lower },
        params: BenchParams::Messaging(m),
    })
}

impl Messaging {
    pub(crate) fn metric_value(&self, v: &View) -> f64 {
        v.span(MARK_START, MARK_END).map_or(f64::NAN, |ns| ns as f64 / 1e9)
    }

    /// perf's driver line, the two `#` lines, a blank line and ` %14s: %lu.%03lu [sec]`.
    pub(crate) fn format_output(&self, v: &View) -> String {
        let what = if self.threads { "threads" } else { "processes" };
        let mut s = format!(
            "# Running 'sched/messaging' benchmark:\n\
             # {FDS} sender and receiver {what} per group\n\
             # {} groups == {} {what} run\n\n",
            self.groups,
            u64::from(self.groups) * 2 * u64::from(FDS)
        );
        if let Some(ns) = v.span(MARK_START, MARK_END) {
            s += &format!(" {:>14}: {} [sec]\n", "Total time", secs_msecs(ns));
        }
        s
    }
}
