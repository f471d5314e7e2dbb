//! The engine: simulated CPUs running tasks under the fair class, driven by an event queue in
//! virtual time.
//!
//! Mechanism lives here (what a CPU is doing, when interrupts and reschedules happen, how task
//! programs consume CPU time); policy lives in [`crate::fair`] and [`crate::select`]. The split
//! into files follows the kernel: `core` (kernel/sched/core.c: `__schedule`, resched and
//! preemption points), `ttwu` (`try_to_wake_up`, fork), `tick` (the tick, hrtick and
//! hrtimers), `exec` (what tasks do), `check` (invariants).

mod balance;
mod check;
mod core;
mod exec;
#[cfg(test)]
mod hier_tests;
mod ipc;
mod tick;
mod tracing;
mod ttwu;

use std::collections::BTreeMap;

use crate::config::{Limits, SchedConfig};
use crate::event::EventQueue;
use crate::fair::group::{GroupSpec, Groups, SharesMode};
use crate::fair::{CfsRq, Fair, FairParams, Resched, SchedEntity};
use crate::ipc::ObjectSpec;
use crate::program::{Op, TaskSpec};
use crate::stats::LatencyHistogram;
use crate::task::{Slots, Step, Task, TaskId, TaskState, TaskStats, WakeeSwitchIns};
use crate::time::Nanos;
use crate::topology::{Costs, Domains, Topology};
use crate::trace::TraceSink;

pub use check::InvariantViolation;

/// Everything a simulation needs: no defaults, the caller (CLI, lab, test) decides.
#[derive(Clone, Debug)]
pub struct SimSetup {
    pub sched: SchedConfig,
    pub topology: Topology,
    pub seed: u64,
    pub limits: Limits,
    /// Task programs. Those not marked `spawned` start at their `start_ns`; the others are
    /// created by `Op::Spawn`.
    pub tasks: Vec<TaskSpec>,
    /// IPC objects the programs refer to by index.
    pub objects: Vec<ObjectSpec>,
    /// Run the invariant checker after every event (tests and `--check`).
    pub check_invariants: bool,
    /// Task groups below the root (cgroups, autogroups); a task's `TaskSpec::group` names
    /// one (0: the root). Empty: every task in the root group, as without them.
    pub groups: Vec<GroupSpec>,
}

/// The events of the simulation. A CPU's step end and hrtick are its slots in the queue,
/// replaced or cancelled in place ([`step_slot`], [`hrtick_slot`]); a sleep timer's generation
/// makes a cancelled one a no-op (lazy cancellation).
#[derive(Clone, Copy, Debug)]
enum Ev {
    /// The current step of the CPU's running task (or its switch-in prologue) ends.
    StepEnd { cpu: u32 },
    /// Periodic scheduler tick.
    Tick { cpu: u32 },
    /// The hrtick one-shot timer.
    Hrtick { cpu: u32 },
    /// Hard expiry of a task's hrtimer sleep.
    TimerHard { cpu: u32, task: TaskId, generation: u32 },
    /// An interrupt return (IPI, or the end of an interrupt handler) on a CPU: a pending
    /// reschedule is acted upon if the preemption model allows it here.
    IrqExit { cpu: u32 },
    /// The reschedule IPI / wake-list IPI reaches a CPU.
    Ipi { cpu: u32 },
    /// An idle CPU leaves its idle state and schedules.
    IdleExit { cpu: u32 },
    /// A task is created (`wake_up_new_task`).
    Fork { task: TaskId },
    /// A NOHZ idle-balance kick reaches an idle CPU.
    NohzBalance { cpu: u32 },
}

/// The queue slot of a CPU's step end.
fn step_slot(cpu: u32) -> u32 {
    2 * cpu
}

/// The queue slot of a CPU's hrtick.
fn hrtick_slot(cpu: u32) -> u32 {
    2 * cpu + 1
}

/// What made the current reschedule request of a CPU (for tick/wakeup preemption counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    Wakeup,
    Tick,
    Other,
}

/// A pending hrtimer sleep on a CPU: `(soft expiry, sequence)` → `(task, timer generation)`.
type TimerKey = (u64, u64);

/// Per-CPU state (`struct rq` outside the fair class, spec §2.3).
///
/// Laid out in order, from a cache line of its own. The first line holds what every event of
/// the CPU reads (the reschedule flag, whether a switch-in is under way, when the running step
/// started, the running task) and what a wakeup's scan of other CPUs reads
/// (`LiveFacts::occupancy`: the running task, the wake list's length, then the fair class's
/// counts at the head of [`CfsRq`]), as the kernel keeps `nr_running` and `curr` near the top
/// of `struct rq`. Scanning 96 CPUs of an LLC then touches 96 lines, not two or three per CPU.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Rq {
    need_resched: Resched,
    resched_cause: Cause,
    in_prologue: bool,
    tick_armed: bool,
    /// An `IdleExit` is already on its way.
    idle_exit_pending: bool,
    /// `idle_exit` is handling the interrupts that were waiting for the CPU to resume.
    idle_resuming: bool,
    /// An IPI is in flight to this CPU.
    ipi_pending: bool,
    /// When the running step (or prologue) started consuming CPU.
    step_start: u64,
    /// Running task; `None` is the idle task.
    curr: Option<TaskId>,
    /// Queued remote wakeups (`rq->wake_list`), processed when the IPI arrives.
    wake_list: Vec<(TaskId, u32)>,
    cfs: CfsRq,
    /// Kernel-mode switch-in work left before the task's own step resumes.
    prologue: u64,
    /// The time of this CPU's queued `Tick` event while `tick_armed`.
    tick_next: u64,
    /// When the armed hrtick expires (`None`: not armed).
    hrtick_at: Option<u64>,
    /// The time of this CPU's one queued `Hrtick` event, if any.
    hrtick_queued: Option<u64>,
    idle_since: Option<u64>,
    idle_ns: u64,
    /// Length of the last idle period (the idle governor's prediction of the next).
    last_idle_ns: u64,
    /// The idle state chosen when the CPU last went idle.
    idle_state: core::IdleState,
    /// The address space the CPU has loaded (x86 `cpu_tlbstate.loaded_mm`): the `mm` of the
    /// last task with one that ran here; kernel threads and idle borrow it (lazy TLB) and leave
    /// it. [`crate::task::NO_MM`] until then (`init_mm`, which no user task has).
    loaded_mm: u32,
    timers: BTreeMap<TimerKey, (TaskId, u32)>,
}

impl Rq {
    fn new() -> Rq {
        Rq {
            curr: None,
            wake_list: Vec::new(),
            cfs: CfsRq::default(),
            need_resched: Resched::None,
            resched_cause: Cause::Other,
            step_start: 0,
            prologue: 0,
            in_prologue: false,
            tick_armed: false,
            tick_next: 0,
            hrtick_at: None,
            hrtick_queued: None,
            idle_since: Some(0),
            idle_ns: 0,
            last_idle_ns: 0,
            idle_exit_pending: false,
            idle_resuming: false,
            idle_state: core::IdleState::Shallow,
            loaded_mm: crate::task::NO_MM,
            ipi_pending: false,
            timers: BTreeMap::new(),
        }
    }
    /// `rq->ttwu_pending`: a queued wakeup has not been processed yet.
    fn ttwu_pending(&self) -> bool {
        !self.wake_list.is_empty()
    }
}

/// Run-wide counters (schedstat names where one exists).
#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub nr_switches: u64,
    pub nr_voluntary_switches: u64,
    pub nr_involuntary_switches: u64,
    pub nr_migrations: u64,
    pub nr_wakeups: u64,
    pub nr_wakeups_sync: u64,
    pub nr_wakeups_local: u64,
    pub nr_wakeups_remote: u64,
    pub nr_wakeups_affine: u64,
    pub nr_wakeups_affine_attempts: u64,
    pub nr_wakeups_migrate: u64,
    pub nr_wakeup_preemptions: u64,
    pub nr_tick_preemptions: u64,
    pub nr_ipis: u64,
    /// Wakeups issued from interrupt context (timers, softirq, IPIs): not a schedstat, but
    /// what decides `in_task()` for the forced-preemption rule and `Origin` of reschedules.
    pub nr_wakeups_irq: u64,
    /// Switch-ins that loaded another address space (x86 `switch_mm_irqs_off()` writing CR3,
    /// the `tlb_flush` trace event with reason `TLB_FLUSH_ON_TASK_SWITCH`): not a schedstat.
    pub nr_mm_switches: u64,
}

/// A measurement mark (`Op::Mark`): first and last time it was reached, and how often.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkStat {
    pub first_ns: u64,
    pub last_ns: u64,
    pub count: u64,
}

/// Per-task results.
#[derive(Clone, Debug)]
pub struct TaskReport {
    pub pid: u32,
    pub comm: String,
    pub nice: i32,
    pub sum_exec_runtime_ns: u64,
    pub vruntime: u64,
    /// `se.avg.util_avg` and `se.avg.load_avg` as last updated.
    pub util_avg: u64,
    pub load_avg: u64,
    /// The task had exited when the run stopped.
    pub exited: bool,
    /// The task is a kernel thread ([`TaskSpec::kthread`]).
    pub kthread: bool,
    /// The task's group (`SimSetup::groups`: 0 is the root, `i + 1` is `groups[i]`).
    pub group: u32,
    pub stats: TaskStats,
    pub wakee_switch_ins: WakeeSwitchIns,
}

/// The outcome of a run: values only; the caller formats them.
#[derive(Clone, Debug)]
pub struct SimReport {
    pub simulated_ns: u64,
    /// Events handled (a step end, tick, hrtick, timer, IPI, idle exit, fork or balance kick).
    pub events: u64,
    /// Events cancelled before they were due: step ends and hrticks replaced or cancelled in
    /// their slots, and stale sleep timers and hrticks popped and dropped.
    pub stale_events: u64,
    /// Why the run stopped.
    pub stop: StopReason,
    pub counters: Counters,
    /// The `/proc/schedstat` counters of every runqueue and sched domain.
    pub schedstat: crate::schedstat::Schedstat,
    pub idle_ns_per_cpu: Vec<u64>,
    pub wakeup_latency: LatencyHistogram,
    pub tasks: Vec<TaskReport>,
    /// Workload measurements, by id, in id order.
    pub marks: BTreeMap<u16, MarkStat>,
    pub counts: BTreeMap<u16, u64>,
    pub histograms: BTreeMap<u16, LatencyHistogram>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Every task exited.
    AllExited,
    /// Tasks are left but every one is blocked and nothing can wake them (a broken chain:
    /// e.g. a reader whose writer exited).
    Deadlock,
    TimeLimit,
    EventLimit,
}

/// A simulation in progress.
pub struct Sim {
    params: FairParams,
    cfg: SchedConfig,
    topo: Topology,
    costs: Costs,
    limits: Limits,
    check: bool,
    now: u64,
    events: u64,
    stale_events: u64,
    queue: EventQueue<Ev>,
    rqs: Vec<Rq>,
    ents: Vec<SchedEntity>,
    tasks: Vec<Task>,
    specs: Vec<TaskSpec>,
    /// The specs' `ops`, moved out of them and stored once per distinct program: a fetch
    /// reads a 16-byte entry of this dense table instead of a 176-byte spec, and the thousands
    /// of tasks of one kind that a workload makes (rt-app instances, lat_ctx rings, hackbench's
    /// receivers of a group) share one copy, which then stays in the cache.
    programs: Vec<Box<[Op]>>,
    /// Each spec's program in `programs`.
    spec_prog: Vec<u32>,
    counters: Counters,
    /// The `/proc/schedstat` runqueue and domain counters.
    schedstat: crate::schedstat::Schedstat,
    wakeup_latency: LatencyHistogram,
    /// Per task (by index), beside `tasks`.
    wakee_switch_ins: Vec<WakeeSwitchIns>,
    timer_seq: u64,
    live_tasks: u32,
    objects: Vec<ObjectSpec>,
    /// Runtime IPC objects and per-task system call progress (`engine/ipc.rs`).
    ipc: ipc::IpcState,
    marks: BTreeMap<u16, MarkStat>,
    counts: BTreeMap<u16, u64>,
    histograms: BTreeMap<u16, LatencyHistogram>,
    domains: Domains,
    /// The per-LLC `sched_domain_shared` objects (`has_idle_cores`, `nr_idle_scan`).
    llc: Vec<crate::select::LlcShared>,
    lb: balance::Balance,
    /// Where trace events go, if anywhere.
    trace: Option<Box<dyn TraceSink>>,
    /// The seeded stream behind `Costs::jitter_pct`.
    cost_rng: crate::rng::SimRng,
    /// Order of the kernel's `rq->cfs_tasks` lists: bumped at every enqueue and pick.
    lb_seq: u64,
    /// Called every `Observer::every` events (progress reports); nothing it sees feeds back.
    observer: Option<Observer>,
    /// With `check`: the CPUs whose fair class an event used (or that it was for), in order
    /// of first touch, and a flag per CPU. Only these are checked between full checks.
    touched: Vec<u32>,
    is_touched: Vec<bool>,
    /// With `check`: the checker's buffers, reused from check to check.
    scratch: check::CheckScratch,
    /// With `check`: the event count (handled and stale) of the next full check.
    next_full_check: u64,
    /// The task groups, if the run has any besides the root.
    groups: Option<Groups>,
    /// ≤7.2's group levels (`fair/hier.rs`): each group's runqueue and entity per CPU,
    /// `[cpu * groups.len() + g]` (slot 0 of a CPU unused). Empty without the hierarchy.
    gcfs: Vec<CfsRq>,
    gents: Vec<SchedEntity>,
}

/// With `--check`, every invariant is checked at least every this many events, and after the
/// others only the runqueues the event touched (and their task groups).
const FULL_CHECK_EVERY: u64 = 64;

/// Events from one full check to the next: `FULL_CHECK_EVERY`, or one per task and CPU on
/// larger machines, so that the full check's cost (linear in tasks + CPUs × groups) comes to
/// a bounded amount per event however large the machine (a 192-CPU hackbench of 321 tasks
/// checks in full every 513 events, a 2-CPU pipe still every 64).
fn full_check_interval(tasks: usize, cpus: usize) -> u64 {
    FULL_CHECK_EVERY.max((tasks + cpus) as u64)
}

/// A callback the run loop calls with (simulated ns, events so far) every `every` events. The
/// simulator reads no clock: a caller that wants wall time reads it in the callback.
struct Observer {
    every: u64,
    f: Box<dyn FnMut(u64, u64) + Send>,
}

impl Sim {
    /// Calls `f(simulated_ns, events)` every `every` events (at least 1) during the run, e.g.
    /// to draw a progress line. It cannot change the run: the output stays byte-identical.
    pub fn set_observer(&mut self, every: u64, f: Box<dyn FnMut(u64, u64) + Send>) {
        self.observer = Some(Observer { every: every.max(1), f });
    }

    /// Builds the simulation. Task specs must already be valid (`TaskSpec::validate`).
    pub fn new(setup: SimSetup) -> Result<Sim, String> {
        let ncpus = setup.topology.nr_cpus() as u32;
        if ncpus == 0 {
            return Err("topology has no CPUs".into());
        }
        let params = FairParams::new(&setup.sched, ncpus);
        let domains = setup.topology.build_domains();
        let lb = balance::Balance::new(&domains, &setup.topology, &setup.sched, setup.seed);
        let llc = crate::select::LlcShared::for_domains(&domains);
        let ipc_costs = setup.topology.costs.ipc;
        let groups = if setup.groups.is_empty() {
            None
        } else {
            let mode = if setup.sched.behavior.concur_shares { SharesMode::Concur } else { SharesMode::Smp };
            Some(Groups::with_hierarchy(&setup.groups, ncpus, mode, setup.sched.behavior.group_levels)?)
        };
        let (gcfs, gents) = match &groups {
            Some(g) if g.is_hierarchy() => {
                let n = g.len();
                let ents = (0..ncpus as usize * n)
                    .map(|i| crate::fair::hier::group_entity(if i % n == 0 { 0 } else { g.parent((i % n) as u32) }))
                    .collect();
                ((0..ncpus as usize * n).map(|_| CfsRq::default()).collect(), ents)
            }
            _ => (Vec::new(), Vec::new()),
        };
        let mut sim = Sim {
            groups,
            gcfs,
            gents,
            trace: None,
            observer: None,
            touched: Vec::new(),
            is_touched: vec![false; ncpus as usize],
            scratch: check::CheckScratch::default(),
            next_full_check: FULL_CHECK_EVERY,
            cost_rng: crate::rng::SimRng::stream(setup.seed, crate::rng::Stream::Costs),
            llc,
            schedstat: crate::schedstat::Schedstat::new((0..ncpus).map(|c| domains.of(c).len())),
            domains,
            lb,
            lb_seq: 0,
            params,
            costs: setup.topology.costs.clone(),
            topo: setup.topology,
            cfg: setup.sched,
            limits: setup.limits,
            check: setup.check_invariants,
            now: 0,
            events: 0,
            stale_events: 0,
            queue: EventQueue::default(),
            rqs: (0..ncpus).map(|_| Rq::new()).collect(),
            ents: Vec::new(),
            tasks: Vec::new(),
            specs: Vec::new(),
            programs: Vec::new(),
            spec_prog: Vec::new(),
            counters: Counters::default(),
            wakeup_latency: LatencyHistogram::default(),
            wakee_switch_ins: Vec::new(),
            timer_seq: 0,
            live_tasks: 0,
            ipc: ipc::IpcState::new(&setup.objects, &setup.tasks, ncpus, &ipc_costs)?,
            objects: setup.objects,
            marks: BTreeMap::new(),
            counts: BTreeMap::new(),
            histograms: BTreeMap::new(),
        };
        let nspecs = setup.tasks.len();
        for spec in &setup.tasks {
            spec.validate()?;
            if spec.group as usize > setup.groups.len() {
                return Err(format!("task `{}`: group {} does not exist", spec.comm, spec.group));
            }
            sim.check_spec_refs(spec, nspecs)?;
        }
        sim.specs = setup.tasks;
        // Identical programs are stored once (a lookup table only: nothing iterates over it).
        let mut seen: std::collections::HashMap<Box<[Op]>, u32> = std::collections::HashMap::new();
        let mut programs = Vec::new();
        sim.spec_prog = sim
            .specs
            .iter_mut()
            .map(|s| {
                let ops = std::mem::take(&mut s.ops).into_boxed_slice();
                *seen.entry(ops).or_insert_with_key(|ops| {
                    programs.push(ops.clone());
                    (programs.len() - 1) as u32
                })
            })
            .collect();
        sim.programs = programs;
        // The tasks created up front, allocated once: growing by doubling would copy every task
        // and entity (a `Task` is cache-line aligned, so the allocator cannot grow it in place)
        // and hold both copies at the process's peak.
        let initial = sim.specs.iter().filter(|s| !s.spawned).count();
        sim.tasks.reserve_exact(initial);
        sim.ents.reserve_exact(initial);
        let nr_mm = sim.specs.iter().filter(|s| !s.kthread).map(|s| s.mm as usize + 1).max().unwrap_or(0);
        sim.lb.cache.init_processes(nr_mm);
        // The kernel starts with nr_idle_scan = 0 (no idle scan until the first periodic LLC
        // balance); start instead from the value for an idle LLC, as after warm-up.
        let mut seen = std::collections::BTreeSet::new();
        for cpu in 0..ncpus {
            if seen.insert(sim.domains.sd_llc_id(cpu)) && sim.domains.sd_llc(cpu).is_some() {
                sim.with_select(|ctx, _| crate::select::update_llc_idle_scan(ctx, cpu));
            }
        }
        for i in 0..sim.specs.len() {
            if !sim.specs[i].spawned {
                let t = sim.create_task(i as u32, None)?;
                let start = sim.specs[i].start_ns;
                sim.queue.push(Nanos(start), Ev::Fork { task: t });
            }
        }
        Ok(sim)
    }

    /// Checks that a program's object, poll-set and spawn references exist.
    fn check_spec_refs(&self, spec: &TaskSpec, nspecs: usize) -> Result<(), String> {
        let nobj = self.objects.len() as u32;
        for op in &spec.ops {
            let bad = match *op {
                Op::Write { obj, .. }
                | Op::Read { obj, .. }
                | Op::FutexWait { obj }
                | Op::FutexWake { obj, .. }
                | Op::LoopWhileEmpty { obj, .. } => {
                    (obj >= nobj).then(|| format!("object {obj} (the workload has {nobj})"))
                }
                Op::Poll { set } | Op::EpollWait { set } => {
                    (set as usize >= spec.poll_sets.len()).then(|| format!("poll set {set}"))
                }
                Op::Spawn { spec } => (spec as usize >= nspecs).then(|| format!("task spec {spec}")),
                _ => None,
            };
            if let Some(what) = bad {
                return Err(format!("task `{}` refers to {what}, which does not exist", spec.comm));
            }
        }
        if let Some(o) = spec.poll_sets.iter().flatten().find(|&&o| o >= nobj) {
            return Err(format!("task `{}` polls object {o}, which does not exist", spec.comm));
        }
        Ok(())
    }

    /// Creates a task instance of spec `spec_idx` (not yet runnable: a `Fork` follows).
    fn create_task(&mut self, spec_idx: u32, parent: Option<TaskId>) -> Result<TaskId, String> {
        let spec = &self.specs[spec_idx as usize];
        let spec_kthread = spec.kthread;
        // A spawned child's flips are its parent's (ipc_spawn copies them after creation).
        let spec_flips = spec.wakee_flips;
        let ncpus = self.rqs.len() as u32;
        let allowed = match &spec.cpus {
            Some(list) => {
                let mut v = list.clone();
                v.sort_unstable();
                v.dedup();
                if let Some(bad) = v.iter().find(|&&c| c >= ncpus) {
                    return Err(format!(
                        "task `{}`: CPU {bad} does not exist (the topology has {ncpus} CPUs)",
                        spec.comm
                    ));
                }
                if v.is_empty() {
                    return Err(format!("task `{}`: empty CPU list", spec.comm));
                }
                crate::cpumask::CpuMask::from_cpus(ncpus, v)
            }
            None => crate::cpumask::CpuMask::full(ncpus),
        };
        let Some(first_cpu) = allowed.first() else {
            return Err(format!("task `{}`: empty CPU list", spec.comm));
        };
        let id = TaskId(self.tasks.len() as u32);
        let nr_lat = self.programs[self.spec_prog[spec_idx as usize] as usize]
            .iter()
            .filter_map(|op| match op {
                Op::LatStart { slot } | Op::LatEnd { slot, .. } => Some(*slot as usize + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let slice = spec.slice_ns.map(crate::fair::entity::clamp_custom_slice);
        let mut se = SchedEntity::new(spec.policy, spec.nice, slice);
        se.group = spec.group;
        self.ents.push(se);
        self.wakee_switch_ins.push(WakeeSwitchIns::default());
        let comm: Box<str> = spec.comm.chars().take(15).collect::<String>().into_boxed_str();
        self.tasks.push(Task {
            pid: 1000 + id.0,
            comm,
            nice: spec.nice,
            spec: spec_idx,
            mm: if spec.kthread { crate::task::NO_MM } else { spec.mm },
            timer_slack_ns: spec.timer_slack_ns,
            state: TaskState::New,
            cpu: first_cpu,
            allowed,
            pc: 0,
            step: Step::Next,
            loop_counters: Slots::new(spec.nr_slots as usize, 0),
            timer_next: vec![None; spec.nr_timers as usize].into_boxed_slice(),
            timer_gen: 0,
            waking_since: None,
            last_wakee: None,
            wakee_flips: spec_flips,
            wakee_flip_decay_ts: 0,
            recent_used_cpu: 0,
            parent,
            live_children: 0,
            lb_seq: 0,
            last_cpu: None,
            cache_debt_ns: 0,
            lat_start: vec![0; nr_lat].into_boxed_slice(),
            preferred_llc: None,
            cache_work_pending: false,
            stats: TaskStats::default(),
        });
        if !spec_kthread {
            self.live_tasks += 1;
        }
        Ok(id)
    }

    /// Runs like [`Sim::run`] while streaming trace events to `sink`, which is handed back so
    /// the caller can finish it (flush a file, close a protobuf stream).
    pub fn run_traced(
        mut self,
        sink: Box<dyn TraceSink>,
    ) -> (Result<SimReport, InvariantViolation>, Box<dyn TraceSink>) {
        self.trace = Some(sink);
        let mut sink_out = None;
        let result = self.run_loop(&mut sink_out);
        #[allow(clippy::expect_used, reason = "run_loop hands the sink back on every path")]
        let sink = sink_out.expect("run_loop hands the sink back on every path");
        (result, sink)
    }

    /// Runs to the first limit (or until every task has exited) and returns the report.
    pub fn run(self) -> Result<SimReport, InvariantViolation> {
        self.run_loop(&mut None)
    }

    fn run_loop(mut self, sink_out: &mut Option<Box<dyn TraceSink>>) -> Result<SimReport, InvariantViolation> {
        let stop = loop {
            let Some(at) = self.queue.peek_time() else {
                break if self.live_tasks == 0 { StopReason::AllExited } else { StopReason::Deadlock };
            };
            if at.0 > self.limits.max_time_ns {
                self.advance_to(self.limits.max_time_ns);
                break StopReason::TimeLimit;
            }
            if self.events >= self.limits.max_events {
                break StopReason::EventLimit;
            }
            #[allow(clippy::expect_used, reason = "the queue was peeked non-empty just above")]
            let (at, ev) = self.queue.pop().expect("peeked");
            assert!(at.0 >= self.now, "time went backwards: {} < {}", at.0, self.now);
            self.now = at.0;
            if self.dispatch(ev) {
                self.events += 1;
                if let Some(o) = &mut self.observer
                    && self.events.is_multiple_of(o.every)
                {
                    (o.f)(self.now, self.events);
                }
            } else {
                self.stale_events += 1;
            }
            if self.check
                && let Err(v) = if self.events + self.stale_events >= self.next_full_check {
                    self.next_full_check += full_check_interval(self.tasks.len(), self.rqs.len());
                    self.check_invariants()
                } else {
                    self.check_touched()
                }
            {
                *sink_out = self.trace.take();
                return Err(v);
            }
            if self.live_tasks == 0 {
                break StopReason::AllExited;
            }
        };
        // The events since the last full check were checked only where they touched: one
        // last full check, so that a run never ends on an unseen broken state.
        if self.check
            && let Err(v) = self.check_invariants()
        {
            *sink_out = self.trace.take();
            return Err(v);
        }
        *sink_out = self.trace.take();
        Ok(self.report(stop))
    }

    fn advance_to(&mut self, t: u64) {
        self.now = self.now.max(t);
    }

    /// Handles one event; false if it was stale (cancelled by a newer generation).
    fn dispatch(&mut self, ev: Ev) -> bool {
        if self.check {
            match ev {
                Ev::StepEnd { cpu }
                | Ev::Tick { cpu }
                | Ev::Hrtick { cpu }
                | Ev::TimerHard { cpu, .. }
                | Ev::IrqExit { cpu }
                | Ev::Ipi { cpu }
                | Ev::IdleExit { cpu }
                | Ev::NohzBalance { cpu } => self.touch(cpu),
                Ev::Fork { .. } => {}
            }
        }
        match ev {
            Ev::StepEnd { cpu } => {
                self.step_end(cpu);
            }
            Ev::Tick { cpu } => self.tick(cpu),
            Ev::Hrtick { cpu } => {
                return self.hrtick_expired(cpu);
            }
            Ev::TimerHard { cpu, task, generation } => {
                if self.tasks[task.idx()].timer_gen != generation {
                    return false;
                }
                let rq = &self.rqs[cpu as usize];
                if self.tasks[task.idx()].mm == crate::task::NO_MM && rq.tick_armed && rq.tick_next == self.now {
                    // A timer-wheel timer of a busy CPU: the tick at this instant expires it
                    // from its TIMER_SOFTIRQ, after `sched_tick()` ([`Sim::arm_sleep_timer`]).
                    return false;
                }
                self.timer_interrupt(cpu);
                self.irq_exit(cpu);
            }
            Ev::IrqExit { cpu } => {
                self.irq_exit(cpu);
            }
            Ev::Ipi { cpu } => self.ipi(cpu),
            Ev::IdleExit { cpu } => self.idle_exit(cpu),
            Ev::Fork { task } => self.wake_up_new_task(task),
            Ev::NohzBalance { cpu } => self.nohz_balance(cpu),
        }
        true
    }

    /// One draw of a kernel cost: `ns` varied uniformly within ±`jitter_pct` percent.
    pub(super) fn cost(&mut self, ns: u64) -> u64 {
        let j = self.costs.jitter_pct;
        if j == 0 || ns == 0 {
            return ns;
        }
        let pct = 100 - j + self.cost_rng.below(2 * j + 1);
        ns * pct / 100
    }

    /// Records that the current event used `cpu`'s runqueue (for `--check`).
    fn touch(&mut self, cpu: u32) {
        if !std::mem::replace(&mut self.is_touched[cpu as usize], true) {
            self.touched.push(cpu);
        }
    }

    /// A fair-class view of `cpu` at the current time.
    fn fair(&mut self, cpu: u32) -> Fair<'_> {
        self.llc_flush(cpu);
        if self.check {
            self.touch(cpu);
        }
        self.fair_raw(cpu)
    }

    /// A fair-class view of `cpu` that reads without flushing CONFIG_SCHED_CACHE's runtime or
    /// marking the CPU for `--check` (callers that only look).
    fn fair_raw(&mut self, cpu: u32) -> Fair<'_> {
        let mut f = Fair::new(&mut self.rqs[cpu as usize].cfs, &mut self.ents, &self.params, self.now);
        if let Some(g) = self.groups.as_mut() {
            if !self.gents.is_empty() {
                let n = g.len();
                let r = cpu as usize * n..(cpu as usize + 1) * n;
                f.gcfs = &mut self.gcfs[r.clone()];
                f.gents = &mut self.gents[r];
            }
            f.groups = Some((g, cpu));
        }
        f
    }

    /// The queued tasks of `cpu` on ≤7.2's levels (the root's tree holds group entities).
    fn queued_tasks_hier(&self, cpu: u32) -> impl Iterator<Item = TaskId> + '_ {
        self.tasks
            .iter()
            .zip(&self.ents)
            .enumerate()
            .filter(move |(_, (t, se))| t.cpu == cpu && se.on_rq)
            .map(|(i, _)| TaskId(i as u32))
    }

    /// The fair class's running task of `cpu` (`cfs_rq->curr` of the task's own level).
    fn cfs_curr_task(&self, cpu: u32) -> Option<TaskId> {
        let rq = &self.rqs[cpu as usize];
        if self.gents.is_empty() {
            return rq.cfs.curr;
        }
        let n = self.groups.as_ref().map_or(1, |g| g.len());
        let mut c = rq.cfs.curr?;
        while let Some(g) = crate::fair::hier::se_group(c) {
            c = self.gcfs[cpu as usize * n + g as usize].curr?;
        }
        Some(c)
    }

    /// `cfs_rq_of(&p->se)->next` for a task `p` of `cpu`.
    fn cfs_next_of(&self, cpu: u32, p: TaskId) -> Option<TaskId> {
        let g = self.ents[p.idx()].group;
        if self.gents.is_empty() || g == 0 {
            return self.rqs[cpu as usize].cfs.next;
        }
        let n = self.groups.as_ref().map_or(1, |g| g.len());
        self.gcfs[cpu as usize * n + g as usize].next
    }

    /// `task_h_load(p)` (fair.c 6.12.117 / 7.2.12 / 7.3.4) with `cpu = task_cpu(p)`: with task
    /// groups the hierarchy's `update_cfs_rq_h_load()` scaling (`fair/group_pelt.rs`), else the
    /// root group's `load_avg · h_load / (load_avg + 1)`.
    fn task_h_load(&mut self, p: TaskId, cpu: u32, jiffies: u64) -> u64 {
        let se = &self.ents[p.idx()];
        let load_avg = se.pelt.avg.load_avg;
        match self.groups.as_mut() {
            Some(groups) => groups.task_h_load(cpu, se.group, load_avg, jiffies),
            None => self.rqs[cpu as usize].cfs.pelt.task_h_load(load_avg, jiffies),
        }
    }

    /// The cfs_rq whose `load_avg` is `cpu_load(cpu)`: with task groups the root of the load
    /// hierarchy (group entities' loads, not their tasks'), else the root cfs_rq.
    fn load_pelt(&self, cpu: u32) -> &crate::pelt::CfsRqPelt {
        match &self.groups {
            Some(groups) => groups.load_root(cpu),
            None => &self.rqs[cpu as usize].cfs.pelt,
        }
    }

    fn report(mut self, stop: StopReason) -> SimReport {
        // Close open idle periods and charge running tasks up to the end.
        for cpu in 0..self.rqs.len() as u32 {
            let rq = &mut self.rqs[cpu as usize];
            if let Some(since) = rq.idle_since {
                rq.idle_ns += self.now - since;
                rq.idle_since = Some(self.now);
            }
            let mut f = self.fair(cpu);
            f.update_curr_fair();
        }
        // The programs and pending events are not reported: free them before the reports are
        // built, which is the process's memory peak (a `Task` is cache-line aligned, so the
        // reports cannot reuse the tasks' allocation).
        self.specs = Vec::new();
        self.programs = Vec::new();
        self.spec_prog = Vec::new();
        self.queue = EventQueue::default();
        // Moved, not cloned: the per-task histograms would otherwise exist twice at the
        // process's peak.
        let tasks = std::mem::take(&mut self.tasks)
            .into_iter()
            .zip(self.ents.iter().zip(&self.wakee_switch_ins))
            .map(|(t, (se, w))| TaskReport {
                kthread: t.mm == crate::task::NO_MM,
                pid: t.pid,
                comm: t.comm.into_string(),
                nice: t.nice,
                sum_exec_runtime_ns: se.sum_exec_runtime,
                vruntime: se.vruntime,
                util_avg: se.pelt.avg.util_avg,
                load_avg: se.pelt.avg.load_avg,
                exited: t.state == TaskState::Dead,
                group: se.group,
                stats: t.stats,
                wakee_switch_ins: *w,
            })
            .collect();
        SimReport {
            simulated_ns: self.now,
            events: self.events,
            stale_events: self.stale_events,
            stop,
            counters: self.counters,
            schedstat: self.schedstat,
            idle_ns_per_cpu: self.rqs.iter().map(|r| r.idle_ns).collect(),
            wakeup_latency: self.wakeup_latency,
            tasks,
            marks: self.marks,
            counts: self.counts,
            histograms: self.histograms,
        }
    }
}

#[cfg(test)]
mod program_tests {
    use super::{Sim, SimSetup};
    use crate::config::{Limits, SchedConfig};
    use crate::program::{Op, TaskSpec};
    use crate::topology::Topology;

    /// Tasks with the same program share one stored copy, and each still runs its own.
    #[test]
    fn identical_programs_are_stored_once_and_each_task_runs_its_own() {
        let prog = |run: u64| vec![Op::Run { ns: run }, Op::Sleep { ns: 1_000_000 }, Op::Run { ns: run }];
        let tasks = vec![
            TaskSpec::new("a", prog(200_000)),
            TaskSpec::new("b", prog(300_000)),
            TaskSpec::new("c", prog(200_000)),
        ];
        let setup = SimSetup {
            sched: SchedConfig::v7_3(),
            topology: Topology::smp(2),
            seed: 1,
            limits: Limits { max_events: 100_000, max_time_ns: 100_000_000 },
            tasks,
            objects: vec![],
            check_invariants: true,
            groups: Vec::new(),
        };
        let sim = Sim::new(setup).expect("valid setup");
        assert_eq!(sim.programs.len(), 2);
        assert_eq!(sim.spec_prog, [0, 1, 0]);
        let report = sim.run().expect("invariants hold");
        let runtime =
            |comm: &str| report.tasks.iter().find(|t| t.comm == comm).map(|t| (t.exited, t.sum_exec_runtime_ns));
        // Each ran its two bursts (plus its own kernel work: exits, the sleep's syscall).
        for (comm, burst) in [("a", 200_000), ("b", 300_000), ("c", 200_000)] {
            let (exited, ns) = runtime(comm).expect("the task is reported");
            assert!(exited, "{comm} finished its program");
            assert!((2 * burst..2 * burst + 50_000).contains(&ns), "{comm}: {ns} ns");
        }
    }

    /// The layout `Rq`'s comment promises: what every event of the CPU and another CPU's
    /// wakeup scan (`LiveFacts::occupancy`) read of a runqueue is in its first cache line.
    #[test]
    fn a_scanned_runqueue_is_read_in_one_cache_line() {
        use super::Rq;
        use crate::fair::CfsRq;
        use crate::task::TaskId;
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(align_of::<Rq>(), 64);
        let cfs = offset_of!(Rq, cfs);
        for end in [
            offset_of!(Rq, need_resched) + 1,
            offset_of!(Rq, in_prologue) + 1,
            offset_of!(Rq, step_start) + 8,
            offset_of!(Rq, curr) + size_of::<Option<TaskId>>(),
            offset_of!(Rq, wake_list) + size_of::<Vec<(TaskId, u32)>>(),
            cfs + offset_of!(CfsRq, h_nr_queued) + 4,
            cfs + offset_of!(CfsRq, h_nr_runnable) + 4,
            cfs + offset_of!(CfsRq, h_nr_idle) + 4,
        ] {
            assert!(end <= 64, "{end}");
        }
    }
}
