//! Metrics recomputed from a trace, with the names `schedlab run --json` uses, and a
//! `perf sched latency`-style table.
//!
//! Definitions (they match the simulator's accounting, so a simulated run's trace gives back
//! its own counters):
//! - a switch is a `sched_switch` whose `prev` is a task (not idle); it is involuntary when
//!   `prev_state` is `R` or `R+` (the task was still runnable), voluntary otherwise;
//! - a wakeup is a `sched_waking`; it is local when the CPU that ran it is the CPU the
//!   following `sched_wakeup` of that task queued it on (the wakee landed on the waker's
//!   CPU), remote otherwise, and "migrate" when that CPU differs from `sched_waking`'s
//!   `target_cpu` (the task's previous CPU);
//! - a migration is "at wakeup" when it falls between the task's `sched_waking` and its
//!   `sched_wakeup` (`set_task_cpu()` from `try_to_wake_up()`), "other" otherwise: load
//!   balancing (periodic, idle, newidle, active), affinity changes, fork/exec placement of a
//!   task already seen. Consecutive "other" migrations between the same two CPUs less than
//!   200 µs apart are counted as one pass (`detach_tasks()` moves several tasks at once);
//! - wakeup latency runs from `sched_waking` to the task's next switch-in;
//! - scheduling delay (the table) runs from `sched_waking`, `sched_wakeup_new` or an
//!   involuntary switch-out to the next switch-in;
//! - runtime is time between a task's switch-in and switch-out; idle time is the same for
//!   pid 0. Before a CPU's first `sched_switch`, its `prev` is taken to have run since the
//!   trace's first record; after its last one, `next` runs to the trace's last record. A CPU
//!   with no record at all is idle for the whole trace.
//!
//! - lag (`schedlab_wakeup_lag`, `schedlab_switch_lag`): the `se->vlag` a matching wakee
//!   carries at its `sched_wakeup`, and the one a matching task leaves with when it goes to
//!   sleep (a `sched_switch` with `prev_state` other than R), counted apart when the task stays
//!   queued as delayed (`sched_delayed`: it was not eligible, and its lag is settled later);
//!
//! With a [`Filter`], run-wide counters count only events of matching tasks (the switched-out
//! task, the wakee, the migrated task); idle time is per CPU and never filtered.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;

use sim::stats::{LatencyHistogram, Percentiles};

use crate::read::{Event, ParseError, Record, read_ftrace_text};

/// Which tasks count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Exact task name (as the trace shows it: at most 15 bytes).
    pub comm: Option<String>,
    pub pid: Option<u32>,
    /// Further names that match as `comm` does, for a workload whose tasks carry several
    /// (schbench's message and worker threads, netperf and its netserver).
    pub also_comms: Vec<String>,
}

impl Filter {
    pub fn matches(&self, pid: u32, comm: &str) -> bool {
        self.pid.is_none_or(|p| p == pid)
            && self.comm.as_deref().is_none_or(|c| c == comm || self.also_comms.iter().any(|a| a == comm))
    }

    pub fn is_empty(&self) -> bool {
        self.comm.is_none() && self.pid.is_none()
    }
}

/// Per-task figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskAnalysis {
    pub pid: u32,
    /// The last name the trace gave the task.
    pub comm: String,
    pub runtime_ns: u64,
    pub nr_switches: u64,
    pub nr_voluntary_switches: u64,
    pub nr_involuntary_switches: u64,
    pub nr_migrations: u64,
    pub nr_wakeups: u64,
    /// Scheduling delays: count, sum, largest, and the switch-in time that ended the largest.
    pub nr_delays: u64,
    pub total_delay_ns: u64,
    pub max_delay_ns: u64,
    pub max_delay_at_ns: u64,
}

impl TaskAnalysis {
    pub fn avg_delay_ns(&self) -> u64 {
        self.total_delay_ns.checked_div(self.nr_delays).unwrap_or(0)
    }
}

/// How often a decision reason occurred, and how often it preempted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReasonCount {
    pub count: u64,
    pub preempt: u64,
}

/// The result of analysing a trace.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub filter: Filter,
    /// Records analysed (after skipping non-scheduler lines).
    pub records: u64,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    pub nr_cpus: u32,
    pub nr_switches: u64,
    pub nr_voluntary_switches: u64,
    pub nr_involuntary_switches: u64,
    pub nr_migrations: u64,
    pub nr_wakeups: u64,
    pub nr_wakeups_local: u64,
    pub nr_wakeups_remote: u64,
    pub nr_wakeups_migrate: u64,
    /// Migrations between a task's `sched_waking` and `sched_wakeup`.
    pub nr_migrations_at_wakeup: u64,
    /// The other migrations (balancing, affinity), and the passes they came in.
    pub nr_migrations_other: u64,
    pub nr_migration_passes: u64,
    /// The most tasks one pass moved.
    pub max_migrations_per_pass: u64,
    pub wakeup_latency: LatencyHistogram,
    pub idle_ns_per_cpu: Vec<u64>,
    /// Tasks that match the filter (pid 0 excluded), by pid.
    pub tasks: Vec<TaskAnalysis>,
    /// `schedlab_wakeup_preempt` reasons, by name.
    pub wakeup_preempt_reasons: BTreeMap<String, ReasonCount>,
    /// `schedlab_placement` reasons, by name.
    pub placement_reasons: BTreeMap<String, ReasonCount>,
    /// Involuntary switch-outs of matching tasks by cause, indexed as `PreemptCause::ALL`.
    pub preempted_by: [u64; PreemptCause::ALL.len()],
    /// `se->vlag` of matching wakees at `sched_wakeup` (virtual ns).
    pub wakeup_lag: LagHistogram,
    /// `se->vlag` of matching tasks that went to sleep and left the runqueue.
    pub sleep_lag: LagHistogram,
    /// Sleeps of matching tasks that stayed queued as delayed.
    pub nr_sleeps_delayed: u64,
    /// `wakee_flips` of matching tasks at their `sched_waking` (`schedlab_waking_flips`), the
    /// wakee's side of `wake_wide()`.
    pub wakee_flips: LatencyHistogram,
}

/// Signed lags (virtual ns) with bounded memory: magnitudes in two HDR histograms.
#[derive(Clone, Debug, Default)]
pub struct LagHistogram {
    neg: LatencyHistogram,
    zero: u64,
    pos: LatencyHistogram,
}

impl LagHistogram {
    pub fn record(&mut self, lag: i64) {
        match lag.signum() {
            -1 => self.neg.record(lag.unsigned_abs()),
            0 => self.zero += 1,
            _ => self.pos.record(lag as u64),
        }
    }

    pub fn len(&self) -> u64 {
        self.neg.len() + self.zero + self.pos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shares of negative, zero and positive lags.
    pub fn shares(&self) -> (f64, f64, f64) {
        let n = self.len().max(1) as f64;
        (self.neg.len() as f64 / n, self.zero as f64 / n, self.pos.len() as f64 / n)
    }

    /// The lag at quantile `q` (0..=1) of all recorded ones; 0 when empty.
    pub fn quantile(&self, q: f64) -> i64 {
        let (neg, zero) = (self.neg.len() as f64, self.zero as f64);
        let n = self.len();
        if n == 0 {
            return 0;
        }
        let rank = q.clamp(0.0, 1.0) * n as f64;
        if rank < neg {
            // The most negative lag comes first: the negative side's quantiles reversed.
            -(self.neg.quantile(1.0 - rank / neg) as i64)
        } else if rank < neg + zero || self.pos.is_empty() {
            0
        } else {
            self.pos.quantile(((rank - neg - zero) / self.pos.len() as f64).min(1.0)) as i64
        }
    }
}

#[derive(Default)]
struct TaskState {
    a: TaskAnalysis,
    waking_since: Option<u64>,
    runnable_since: Option<u64>,
    /// The CPU that ran the pending `sched_waking`, and its `target_cpu` (the previous CPU).
    waking_cpus: Option<(u32, u32)>,
}

#[derive(Clone, Copy, Default)]
struct CpuState {
    /// Running pid and since when, once known.
    curr: Option<(u32, u64)>,
    idle_ns: u64,
    seen: bool,
    /// What the current run has seen that can end it runnable.
    marks: RunMarks,
    /// The last `sched_switch`'s prev, while its `schedlab_switch_lag` may follow: its pid,
    /// and whether it is a matching task that went to sleep.
    switched_out: Option<(u32, bool)>,
}

/// The reschedule sources a run has seen. `wakeup` is the run's own preempting wakeup before
/// any hrtick expiry (both always ask for a switch; a tick or an IPI may not).
#[derive(Clone, Copy, Default)]
struct RunMarks {
    wakeup: bool,
    hrtick: bool,
    tick: bool,
    ipi: bool,
}

impl RunMarks {
    fn mark(&mut self, cause: PreemptCause) {
        match cause {
            PreemptCause::Wakeup => self.wakeup |= !self.hrtick,
            PreemptCause::Hrtick => self.hrtick = true,
            PreemptCause::Tick => self.tick = true,
            PreemptCause::Ipi => self.ipi = true,
            PreemptCause::Untraced => {}
        }
    }

    /// What ended a run switched out runnable: the running task's own wakeup, if it came
    /// before any slice-end timer; else the hrtick (the slice ran out), the tick, a reschedule
    /// IPI from another CPU (a remote wakeup or balancing), in that order.
    fn cause(&self) -> PreemptCause {
        if self.wakeup {
            PreemptCause::Wakeup
        } else if self.hrtick {
            PreemptCause::Hrtick
        } else if self.tick {
            PreemptCause::Tick
        } else if self.ipi {
            PreemptCause::Ipi
        } else {
            PreemptCause::Untraced
        }
    }
}

/// Why a task was switched out runnable (`prev_state` R), as far as the trace shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptCause {
    /// A wakeup the task issued set need-resched (`wakeup_preempt`): in a real trace, a
    /// `sched_wakeup` on the task's CPU from the task with the need-resched flag; in a
    /// simulated one, a `schedlab_wakeup_preempt` with `preempt=1`.
    Wakeup,
    /// `hrtimer_expire_entry function=hrtick` during the run.
    Hrtick,
    /// The tick's timer expired during the run.
    Tick,
    /// `reschedule_entry` during the run.
    Ipi,
    /// None of the above is in the trace (the events were not recorded, or another path).
    Untraced,
}

impl PreemptCause {
    pub const ALL: [PreemptCause; 5] =
        [PreemptCause::Wakeup, PreemptCause::Hrtick, PreemptCause::Tick, PreemptCause::Ipi, PreemptCause::Untraced];

    pub fn name(self) -> &'static str {
        match self {
            PreemptCause::Wakeup => "wakeup",
            PreemptCause::Hrtick => "hrtick",
            PreemptCause::Tick => "tick",
            PreemptCause::Ipi => "resched_ipi",
            PreemptCause::Untraced => "untraced",
        }
    }
}

/// Feeds records one at a time; memory is bounded by tasks and CPUs.
pub struct Analyzer {
    filter: Filter,
    records: u64,
    first: Option<u64>,
    last: u64,
    cpus: Vec<CpuState>,
    tasks: BTreeMap<u32, TaskState>,
    nr_switches: u64,
    nr_voluntary_switches: u64,
    nr_involuntary_switches: u64,
    nr_migrations: u64,
    nr_wakeups: u64,
    nr_wakeups_local: u64,
    nr_wakeups_remote: u64,
    nr_wakeups_migrate: u64,
    nr_migrations_at_wakeup: u64,
    nr_migrations_other: u64,
    nr_migration_passes: u64,
    max_migrations_per_pass: u64,
    /// The last counted "other" migration: (ts, orig, dest) and how many its pass has moved.
    last_other: Option<(u64, u32, u32, u64)>,
    wakeup_latency: LatencyHistogram,
    wakeup_preempt_reasons: BTreeMap<String, ReasonCount>,
    placement_reasons: BTreeMap<String, ReasonCount>,
    preempted_by: [u64; PreemptCause::ALL.len()],
    wakeup_lag: LagHistogram,
    sleep_lag: LagHistogram,
    nr_sleeps_delayed: u64,
    wakee_flips: LatencyHistogram,
}

/// Two "other" migrations between the same CPUs this close belong to one balancing pass:
/// `detach_tasks()` then `attach_tasks()` move a batch within microseconds even in an
/// emulated guest, and two periodic passes are at least a jiffy apart.
const PASS_GAP_NS: u64 = 200_000;

impl Analyzer {
    pub fn new(filter: Filter) -> Self {
        Analyzer {
            filter,
            records: 0,
            first: None,
            last: 0,
            cpus: Vec::new(),
            tasks: BTreeMap::new(),
            nr_switches: 0,
            nr_voluntary_switches: 0,
            nr_involuntary_switches: 0,
            nr_migrations: 0,
            nr_wakeups: 0,
            nr_wakeups_local: 0,
            nr_wakeups_remote: 0,
            nr_wakeups_migrate: 0,
            nr_migrations_at_wakeup: 0,
            nr_migrations_other: 0,
            nr_migration_passes: 0,
            max_migrations_per_pass: 0,
            last_other: None,
            wakeup_latency: LatencyHistogram::default(),
            wakeup_preempt_reasons: BTreeMap::new(),
            placement_reasons: BTreeMap::new(),
            preempted_by: [0; PreemptCause::ALL.len()],
            wakeup_lag: LagHistogram::default(),
            sleep_lag: LagHistogram::default(),
            nr_sleeps_delayed: 0,
            wakee_flips: LatencyHistogram::default(),
        }
    }

    /// Marks a reschedule source on `cpu`'s current run; `from` is the task the record ran
    /// in, which must be the CPU's current one for a wakeup to count as its own.
    fn mark(&mut self, cpu: u32, from: u32, cause: PreemptCause) {
        let c = self.cpu(cpu);
        if cause != PreemptCause::Wakeup || c.curr.is_none_or(|(pid, _)| pid == from) {
            c.marks.mark(cause);
        }
    }

    fn cpu(&mut self, cpu: u32) -> &mut CpuState {
        let i = cpu as usize;
        if i >= self.cpus.len() {
            self.cpus.resize(i + 1, CpuState::default());
        }
        &mut self.cpus[i]
    }

    fn task(&mut self, pid: u32, comm: &str) -> &mut TaskState {
        let t = self.tasks.entry(pid).or_default();
        t.a.pid = pid;
        if t.a.comm != comm {
            t.a.comm.clear();
            t.a.comm.push_str(comm);
        }
        t
    }

    /// Time `pid` ran on a CPU from `since` to `now`.
    fn account(&mut self, cpu: u32, pid: u32, since: u64, now: u64) {
        let d = now.saturating_sub(since);
        if pid == 0 {
            self.cpu(cpu).idle_ns += d;
        } else if let Some(t) = self.tasks.get_mut(&pid) {
            t.a.runtime_ns += d;
        } else {
            self.tasks.entry(pid).or_default().a = TaskAnalysis { pid, runtime_ns: d, ..Default::default() };
        }
    }

    pub fn record(&mut self, r: &Record) {
        self.records += 1;
        let ts = r.ts_ns;
        let start = *self.first.get_or_insert(ts);
        self.last = self.last.max(ts);
        self.cpu(r.cpu).seen = true;
        match &r.event {
            Event::Switch { prev, prev_state, next } => {
                let since = match self.cpu(r.cpu).curr {
                    Some((_, since)) => since,
                    None => start,
                };
                if prev.pid != 0 {
                    self.task(prev.pid, &prev.comm);
                }
                self.account(r.cpu, prev.pid, since, ts);
                if prev.pid != 0 {
                    let counted = self.filter.matches(prev.pid, &prev.comm);
                    let involuntary = prev_state.starts_with('R');
                    let t = self.task(prev.pid, &prev.comm);
                    t.a.nr_switches += 1;
                    if involuntary {
                        t.a.nr_involuntary_switches += 1;
                        t.runnable_since = Some(ts);
                    } else {
                        t.a.nr_voluntary_switches += 1;
                        t.runnable_since = None;
                    }
                    if counted {
                        self.nr_switches += 1;
                        if involuntary {
                            self.nr_involuntary_switches += 1;
                            let cause = self.cpu(r.cpu).marks.cause();
                            self.preempted_by[cause as usize] += 1;
                        } else {
                            self.nr_voluntary_switches += 1;
                        }
                    }
                }
                let sleeping = prev.pid != 0 && !prev_state.starts_with(['R', 'X', 'Z']);
                let slept = sleeping && self.filter.matches(prev.pid, &prev.comm);
                let c = self.cpu(r.cpu);
                c.curr = Some((next.pid, ts));
                c.marks = RunMarks::default();
                c.switched_out = Some((prev.pid, slept));
                if next.pid != 0 {
                    let counted = self.filter.matches(next.pid, &next.comm);
                    let t = self.task(next.pid, &next.comm);
                    let latency = t.waking_since.take().map(|w| ts.saturating_sub(w));
                    if let Some(since) = t.runnable_since.take() {
                        let d = ts.saturating_sub(since);
                        t.a.nr_delays += 1;
                        t.a.total_delay_ns += d;
                        if d > t.a.max_delay_ns || t.a.nr_delays == 1 {
                            t.a.max_delay_ns = d;
                            t.a.max_delay_at_ns = ts;
                        }
                    }
                    if counted && let Some(l) = latency {
                        self.wakeup_latency.record(l);
                    }
                }
            }
            Event::Waking { task, target_cpu } => {
                let counted = self.filter.matches(task.pid, &task.comm);
                let t = self.task(task.pid, &task.comm);
                t.a.nr_wakeups += 1;
                t.waking_since = Some(ts);
                t.runnable_since = Some(ts);
                t.waking_cpus = Some((r.cpu, *target_cpu));
                if counted {
                    self.nr_wakeups += 1;
                }
            }
            Event::Wakeup { task, target_cpu } => {
                // The wakee queued here with need-resched now set: this wakeup's
                // `wakeup_preempt` asked for the switch (unless an earlier mark did).
                if r.need_resched && *target_cpu == r.cpu {
                    self.mark(r.cpu, r.pid, PreemptCause::Wakeup);
                }
                let counted = self.filter.matches(task.pid, &task.comm);
                let t = self.task(task.pid, &task.comm);
                if t.runnable_since.is_none() {
                    // A trace without sched_waking: the delay starts here.
                    t.runnable_since = Some(ts);
                }
                if let Some((waker_cpu, prev_cpu)) = t.waking_cpus.take()
                    && counted
                {
                    if waker_cpu == *target_cpu {
                        self.nr_wakeups_local += 1;
                    } else {
                        self.nr_wakeups_remote += 1;
                    }
                    if prev_cpu != *target_cpu {
                        self.nr_wakeups_migrate += 1;
                    }
                }
            }
            Event::WakeupNew { task, .. } => {
                let t = self.task(task.pid, &task.comm);
                t.runnable_since = Some(ts);
            }
            Event::Migrate { task, orig_cpu, dest_cpu } => {
                let counted = self.filter.matches(task.pid, &task.comm);
                let t = self.task(task.pid, &task.comm);
                t.a.nr_migrations += 1;
                let at_wakeup = t.waking_cpus.is_some();
                if counted {
                    self.nr_migrations += 1;
                    if at_wakeup {
                        self.nr_migrations_at_wakeup += 1;
                    } else {
                        self.count_other_migration(ts, *orig_cpu, *dest_cpu);
                    }
                }
            }
            Event::Fork { child, .. } => {
                self.task(child.pid, &child.comm);
            }
            Event::Exit { .. } => {}
            Event::WakeupPreempt { curr, wakee, preempt, reason, .. } => {
                if *preempt {
                    self.mark(r.cpu, curr.pid, PreemptCause::Wakeup);
                }
                if self.filter.matches(wakee.pid, &wakee.comm) {
                    let c = self.wakeup_preempt_reasons.entry(reason.clone()).or_default();
                    c.count += 1;
                    c.preempt += *preempt as u64;
                }
            }
            Event::Placement { task, reason, .. } => {
                if self.filter.matches(task.pid, &task.comm) {
                    self.placement_reasons.entry(reason.clone()).or_default().count += 1;
                }
            }
            Event::TimerExpire { function } => {
                let cause = match function.as_str() {
                    "hrtick" => Some(PreemptCause::Hrtick),
                    f if f.starts_with("tick_") => Some(PreemptCause::Tick),
                    _ => None,
                };
                if let Some(cause) = cause {
                    self.mark(r.cpu, r.pid, cause);
                }
            }
            Event::ReschedIpi => self.mark(r.cpu, r.pid, PreemptCause::Ipi),
            Event::WakeupLag { pid, vlag } => {
                if self.tasks.get(pid).is_some_and(|t| self.filter.matches(*pid, &t.a.comm)) {
                    self.wakeup_lag.record(*vlag);
                }
            }
            Event::WakingFlips { pid, flips } => {
                if self.tasks.get(pid).is_some_and(|t| self.filter.matches(*pid, &t.a.comm)) {
                    self.wakee_flips.record(u64::from(*flips));
                }
            }
            Event::SwitchLag { prev_pid, vlag, delayed } => {
                if let Some((pid, slept)) = self.cpu(r.cpu).switched_out.take()
                    && pid == *prev_pid
                    && slept
                {
                    if *delayed {
                        self.nr_sleeps_delayed += 1;
                    } else {
                        self.sleep_lag.record(*vlag);
                    }
                }
            }
        }
    }

    fn count_other_migration(&mut self, ts: u64, orig: u32, dest: u32) {
        self.nr_migrations_other += 1;
        let moved = match self.last_other {
            Some((t, o, d, n)) if o == orig && d == dest && ts.saturating_sub(t) < PASS_GAP_NS => n + 1,
            _ => {
                self.nr_migration_passes += 1;
                1
            }
        };
        self.max_migrations_per_pass = self.max_migrations_per_pass.max(moved);
        self.last_other = Some((ts, orig, dest, moved));
    }

    /// Closes the open intervals at the last record. `nr_cpus` is the CPU count the trace's
    /// header gave, if any.
    pub fn finish(mut self, nr_cpus: Option<u32>) -> Analysis {
        let (start, end) = (self.first.unwrap_or(0), self.last);
        let nr = nr_cpus.unwrap_or(0).max(self.cpus.len() as u32);
        self.cpu(nr.saturating_sub(1));
        self.cpus.truncate(nr as usize);
        for cpu in 0..nr {
            let c = self.cpus[cpu as usize];
            match c.curr {
                Some((pid, since)) => self.account(cpu, pid, since, end),
                None if !c.seen => self.cpus[cpu as usize].idle_ns = end - start,
                None => {}
            }
        }
        let filter = self.filter.clone();
        let tasks =
            self.tasks.into_values().map(|t| t.a).filter(|a| a.pid != 0 && filter.matches(a.pid, &a.comm)).collect();
        Analysis {
            filter: self.filter,
            records: self.records,
            first_ts_ns: start,
            last_ts_ns: end,
            nr_cpus: nr,
            nr_switches: self.nr_switches,
            nr_voluntary_switches: self.nr_voluntary_switches,
            nr_involuntary_switches: self.nr_involuntary_switches,
            nr_migrations: self.nr_migrations,
            nr_wakeups: self.nr_wakeups,
            nr_wakeups_local: self.nr_wakeups_local,
            nr_wakeups_remote: self.nr_wakeups_remote,
            nr_wakeups_migrate: self.nr_wakeups_migrate,
            nr_migrations_at_wakeup: self.nr_migrations_at_wakeup,
            nr_migrations_other: self.nr_migrations_other,
            nr_migration_passes: self.nr_migration_passes,
            max_migrations_per_pass: self.max_migrations_per_pass,
            wakeup_latency: self.wakeup_latency,
            idle_ns_per_cpu: self.cpus.iter().map(|c| c.idle_ns).collect(),
            tasks,
            wakeup_preempt_reasons: self.wakeup_preempt_reasons,
            placement_reasons: self.placement_reasons,
            preempted_by: self.preempted_by,
            wakeup_lag: self.wakeup_lag,
            sleep_lag: self.sleep_lag,
            nr_sleeps_delayed: self.nr_sleeps_delayed,
            wakee_flips: self.wakee_flips,
        }
    }
}

/// Reads and analyses a whole ftrace text trace.
pub fn analyze<R: BufRead>(reader: R, filter: Filter) -> Result<Analysis, ParseError> {
    let mut records = read_ftrace_text(reader);
    let mut an = Analyzer::new(filter);
    for r in records.by_ref() {
        an.record(&r?);
    }
    if an.records == 0 {
        return Err(ParseError::Empty { lines: records.lines() });
    }
    Ok(an.finish(records.nr_cpus()))
}

impl Analysis {
    pub fn wakeup_latency_ns(&self) -> Percentiles {
        self.wakeup_latency.percentiles()
    }

    /// Share of wakeups whose wakee was queued on the waking CPU (`nr_wakeups_local` over
    /// local + remote), if any wakeup was paired.
    pub fn wakee_on_waker_cpu(&self) -> Option<f64> {
        let n = self.nr_wakeups_local + self.nr_wakeups_remote;
        (n > 0).then(|| self.nr_wakeups_local as f64 / n as f64)
    }

    pub fn span_ns(&self) -> u64 {
        self.last_ts_ns - self.first_ts_ns
    }

    /// The `perf sched latency` table: tasks sorted by average delay, maximum delay,
    /// switches and runtime (perf's default `avg,max,switch,runtime`), then pid.
    pub fn latency_table(&self) -> String {
        let mut tasks: Vec<&TaskAnalysis> = self.tasks.iter().collect();
        tasks.sort_by(|a, b| {
            (b.avg_delay_ns(), b.max_delay_ns, b.nr_switches, b.runtime_ns, a.pid).cmp(&(
                a.avg_delay_ns(),
                a.max_delay_ns,
                a.nr_switches,
                a.runtime_ns,
                b.pid,
            ))
        });
        let rule = format!(" {}\n", "-".repeat(113));
        let ms = |ns: u64| ns as f64 / 1e6;
        let mut s = String::new();
        s += &rule;
        s += "  Task                  |   Runtime ms  | Switches | Avg delay ms    | Max delay ms    | Max delay at       |\n";
        s += &rule;
        let (mut runtime, mut switches) = (0u64, 0u64);
        for t in &tasks {
            runtime += t.runtime_ns;
            switches += t.nr_switches;
            let name = format!("{}:{}", t.comm, t.pid);
            let _ = writeln!(
                s,
                "  {name:<22}|{:>11.3} ms |{:>9} | avg:{:>9.3} ms | max:{:>9.3} ms | max at: {:>6}.{:06} s",
                ms(t.runtime_ns),
                t.nr_switches,
                ms(t.avg_delay_ns()),
                ms(t.max_delay_ns),
                t.max_delay_at_ns / 1_000_000_000,
                (t.max_delay_at_ns % 1_000_000_000) / 1000,
            );
        }
        s += &rule;
        let _ = writeln!(s, "  {:<22}|{:>11.3} ms |{:>9} |", "TOTAL:", ms(runtime), switches);
        let _ = writeln!(s, " {}", "-".repeat(49));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
  hb-10 [000] d..3.  1.000000: sched_waking: comm=hb pid=11 prio=120 target_cpu=001
  hb-10 [000] d..3.  1.000001: sched_migrate_task: comm=hb pid=11 prio=120 orig_cpu=1 dest_cpu=0
  hb-10 [000] d..4.  1.000002: sched_wakeup: comm=hb pid=11 prio=120 target_cpu=000
  hb-12 [001] dNs1.  1.004000: sched_migrate_task: comm=hb pid=13 prio=120 orig_cpu=0 dest_cpu=1
  hb-12 [001] dNs1.  1.004010: sched_migrate_task: comm=hb pid=14 prio=120 orig_cpu=0 dest_cpu=1
  hb-12 [001] dNs1.  1.004020: sched_migrate_task: comm=hb pid=15 prio=120 orig_cpu=0 dest_cpu=1
  hb-10 [000] dNs1.  1.064000: sched_migrate_task: comm=hb pid=13 prio=120 orig_cpu=1 dest_cpu=0
  hb-12 [001] dNs1.  1.124000: sched_migrate_task: comm=hb pid=14 prio=120 orig_cpu=0 dest_cpu=1
";

    /// Five runs switched out runnable: by the runner's own wakeup (the need-resched flag on
    /// its `sched_wakeup`, even after a tick that did not reschedule), by the hrtick, by a
    /// reschedule IPI, by a simulated `schedlab_wakeup_preempt`, and by nothing traced.
    #[test]
    fn involuntary_switch_outs_by_cause() {
        let trace = "\
  hb-20 [000] d.h1.  2.000000: hrtimer_expire_entry: hrtimer=(____ptrval____) function=tick_nohz_handler now=1
  hb-20 [000] d..3.  2.000010: sched_waking: comm=hb pid=21 prio=120 target_cpu=000
  hb-20 [000] dl.4.  2.000020: sched_wakeup: comm=hb pid=21 prio=120 target_cpu=000
  hb-20 [000] d..2.  2.000030: sched_switch: prev_comm=hb prev_pid=20 prev_prio=120 prev_state=R ==> next_comm=hb next_pid=21 next_prio=120
  hb-21 [000] dNh1.  2.000040: hrtimer_expire_entry: hrtimer=(____ptrval____) function=hrtick now=2
  hb-21 [000] dN.2.  2.000050: sched_switch: prev_comm=hb prev_pid=21 prev_prio=120 prev_state=R ==> next_comm=hb next_pid=22 next_prio=120
  hb-22 [000] d.h1.  2.000060: reschedule_entry: vector=253
  hb-22 [000] dN.2.  2.000070: sched_switch: prev_comm=hb prev_pid=22 prev_prio=120 prev_state=R ==> next_comm=hb next_pid=20 next_prio=120
  hb-20 [000] d..4.  2.000080: schedlab_wakeup_preempt: curr_comm=hb curr_pid=20 wakee_comm=hb wakee_pid=23 preempt=1 reason=pick_is_wakee curr_vruntime=0 curr_deadline=0 curr_lag=0 curr_eligible=1 curr_slice=0 curr_vprot=0 curr_delayed=0 curr_buddy=0 wakee_vruntime=0 wakee_deadline=0 wakee_lag=0 wakee_eligible=1 wakee_slice=0 wakee_vprot=0 wakee_delayed=0 wakee_buddy=0
  hb-20 [000] d..2.  2.000090: sched_switch: prev_comm=hb prev_pid=20 prev_prio=120 prev_state=R ==> next_comm=hb next_pid=23 next_prio=120
  hb-23 [000] d..2.  2.000100: sched_switch: prev_comm=hb prev_pid=23 prev_prio=120 prev_state=R ==> next_comm=hb next_pid=20 next_prio=120
";
        let a = analyze(trace.as_bytes(), Filter::default()).expect("parses");
        assert_eq!(a.nr_involuntary_switches, 5);
        let by = |c: PreemptCause| a.preempted_by[c as usize];
        assert_eq!(by(PreemptCause::Wakeup), 2);
        assert_eq!(by(PreemptCause::Hrtick), 1);
        assert_eq!(by(PreemptCause::Ipi), 1);
        assert_eq!(by(PreemptCause::Untraced), 1);
        assert_eq!(by(PreemptCause::Tick), 0);
    }

    /// The lag records as a guest's tracepoint probes print them: a wakee's lag, a sleep that
    /// left the runqueue, one that stayed queued as delayed, and a preemption and an exit whose
    /// records are not sleeps.
    #[test]
    fn lag_at_wakeups_and_sleeps() {
        let trace = "\
  hb-20 [000] d..4.  3.000000: sched_wakeup: comm=hb pid=21 prio=120 target_cpu=000
  hb-20 [000] d..5.  3.000001: schedlab_wakeup_lag: (__probestub_sched_wakeup+0x4/0x10) pid=21 vlag=341252
  hb-20 [000] d..2.  3.000010: sched_switch: prev_comm=hb prev_pid=20 prev_prio=120 prev_state=S ==> next_comm=hb next_pid=21 next_prio=120
  hb-20 [000] d..3.  3.000011: schedlab_switch_lag: (__probestub_sched_switch+0x4/0x10) prev_pid=20 prev_vlag=549373 prev_delayed=0
  hb-21 [000] d..2.  3.000020: sched_switch: prev_comm=hb prev_pid=21 prev_prio=120 prev_state=S ==> next_comm=kw next_pid=30 next_prio=120
  hb-21 [000] d..3.  3.000021: schedlab_switch_lag: (__probestub_sched_switch+0x4/0x10) prev_pid=21 prev_vlag=-427062 prev_delayed=1
  kw-30 [000] d..2.  3.000030: sched_switch: prev_comm=kw prev_pid=30 prev_prio=120 prev_state=R ==> next_comm=hb next_pid=22 next_prio=120
  kw-30 [000] d..3.  3.000031: schedlab_switch_lag: (__probestub_sched_switch+0x4/0x10) prev_pid=30 prev_vlag=-5 prev_delayed=0
  hb-22 [000] d..2.  3.000040: sched_switch: prev_comm=hb prev_pid=22 prev_prio=120 prev_state=X ==> next_comm=swapper/0 next_pid=0 next_prio=120
  hb-22 [000] d..3.  3.000041: schedlab_switch_lag: (__probestub_sched_switch+0x4/0x10) prev_pid=22 prev_vlag=7 prev_delayed=0
";
        let a = analyze(trace.as_bytes(), Filter { comm: Some("hb".into()), ..Default::default() }).expect("parses");
        assert_eq!((a.wakeup_lag.len(), a.sleep_lag.len(), a.nr_sleeps_delayed), (1, 1, 1));
        assert!(near(a.wakeup_lag.quantile(0.5), 341_252), "{:?}", a.wakeup_lag);
        assert!(near(a.sleep_lag.quantile(0.5), 549_373), "{:?}", a.sleep_lag);
    }

    /// The `wakee_flips` probe at `sched_waking`: recorded for the matching wakees only (a
    /// kernel thread's is left out), as a guest prints it.
    #[test]
    fn wakee_flips_at_waking() {
        let trace = "\
  hb-20 [000] d..4.  3.000000: sched_waking: comm=hb pid=21 prio=120 target_cpu=001
  hb-20 [000] d..5.  3.000001: schedlab_waking_flips: (__probestub_sched_waking+0x4/0x10) pid=21 flips=66
  hb-20 [000] d..4.  3.000002: sched_wakeup: comm=hb pid=21 prio=120 target_cpu=001
  hb-20 [000] d..4.  3.000010: sched_waking: comm=kw pid=30 prio=120 target_cpu=000
  hb-20 [000] d..5.  3.000011: schedlab_waking_flips: (__probestub_sched_waking+0x4/0x10) pid=30 flips=1
  hb-20 [000] d..4.  3.000012: sched_wakeup: comm=kw pid=30 prio=120 target_cpu=000
  hb-20 [000] d..4.  3.000020: sched_waking: comm=hb pid=22 prio=120 target_cpu=000
  hb-20 [000] d..5.  3.000021: schedlab_waking_flips: (__probestub_sched_waking+0x4/0x10) pid=22 flips=4
  hb-20 [000] d..4.  3.000022: sched_wakeup: comm=hb pid=22 prio=120 target_cpu=000
";
        let a = analyze(trace.as_bytes(), Filter { comm: Some("hb".into()), ..Default::default() }).expect("parses");
        let p = a.wakee_flips.percentiles();
        assert_eq!((p.count, p.max), (2, 66), "{p:?}");
        assert_eq!(a.wakee_flips.quantile(0.0), 4);
    }

    /// Within the HDR histogram's 3 significant digits.
    fn near(got: i64, want: i64) -> bool {
        got.abs_diff(want) <= want.unsigned_abs() / 500 + 1
    }

    #[test]
    fn signed_lag_quantiles() {
        let mut h = LagHistogram::default();
        for v in [-3000, -1000, 0, 0, 2000, 5000, 9000, 20_000] {
            h.record(v);
        }
        assert_eq!(h.len(), 8);
        assert_eq!(h.shares(), (0.25, 0.25, 0.5));
        // From the most negative lag up, through the zeros.
        for (q, want) in [(0.0, -3000), (0.2, -1000), (0.4, 0), (0.55, 2000), (0.8, 9000), (1.0, 20_000)] {
            assert!(near(h.quantile(q), want), "q {q}: {} vs {want}", h.quantile(q));
        }
        assert_eq!(LagHistogram::default().quantile(0.5), 0);
    }

    #[test]
    fn migrations_split_into_wakeup_ones_and_balancing_passes() {
        let a = analyze(TRACE.as_bytes(), Filter::default()).expect("parses");
        assert_eq!(a.nr_migrations, 6);
        assert_eq!((a.nr_migrations_at_wakeup, a.nr_wakeups_migrate), (1, 1));
        // Three tasks 0 -> 1 within 20 us, then one back, then one 0 -> 1 a pass later.
        assert_eq!((a.nr_migrations_other, a.nr_migration_passes, a.max_migrations_per_pass), (5, 3, 3));
    }
}
