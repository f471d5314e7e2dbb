//! Task programs: what a simulated task does, as a small instruction list that workloads
//! (rt-app JSON, benchmark models) compile into.
//!
//! A program is flat: loops are `Loop` instructions that jump back, with per-task counters, so
//! a task's position is just `(pc, counters)` and stepping is O(1).

use crate::fair::Policy;

/// One instruction of a task program.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Compute in user mode for this much CPU time (rt-app `run`/`runtime`; the simulated CPUs
    /// all have capacity 1024, so the two are the same here).
    Run { ns: u64 },
    /// `nanosleep` for this long (rt-app `sleep`): an hrtimer with the task's timer slack.
    Sleep { ns: u64 },
    /// Sleep until the next period of timer `slot` (rt-app `timer`; one timer per task instance). The first use sets the
    /// timer to `now + period`; later uses add `period`. When the task is late, `absolute`
    /// keeps the schedule (no sleep, next period from the old one) and relative mode restarts
    /// it from now.
    Timer { slot: u16, period_ns: u64, absolute: bool },
    /// `sched_yield()`.
    Yield,
    /// `setpriority()`/`nice()` on itself: a reweight through the save/restore bracket.
    SetNice { nice: i32 },
    /// Jump back to `target` until counter `slot` reaches `count` (`u32::MAX`: forever), then
    /// reset the counter and fall through.
    Loop { target: u32, slot: u16, count: u32 },
    /// Jump back to `target` until `ns` of time have passed since the first pass, then fall
    /// through: a busy loop polling the clock (`end = now() + secs; while (now() < end)`, as
    /// the ground truth's `hogs.c` does through the vDSO, no system call). The deadline is
    /// kept in timer `slot` (cleared on the way out, so the loop can run again).
    LoopUntil { target: u32, slot: u16, ns: u64 },
    /// Jump back to `target` while object `obj` has nothing to read, then fall through: a
    /// `select()` with a zero timeout between a loop's passes, as lmbench's `benchmp` children
    /// poll their control pipes between iterations (`benchmp_interval()`, lib_timing.c).
    /// Takes no time of its own; nothing is read.
    LoopWhileEmpty { target: u32, obj: u32 },
    /// Exit the task.
    Exit,

    // ---- IPC (objects are `SimSetup::objects`, referred to by index) ----------------------
    /// `write()`/`send()` of `bytes` to object `obj` (pipe, socket direction, eventfd):
    /// blocks while the object is full; wakes readers with the object's wake semantics.
    Write { obj: u32, bytes: u32 },
    /// `read()`/`recv()` of up to `bytes` (exactly `bytes` with `exact`, retrying like
    /// hackbench's read loop): blocks while the object is empty.
    Read { obj: u32, bytes: u32, exact: bool },
    /// `poll()` on objects `objs[first..first+count]` of the task spec's `poll_sets`, until one
    /// is readable (pollers are non-exclusive waiters; WF_SYNC is inherited from the source).
    Poll { set: u32 },
    /// `epoll_wait()` on a poll set (an exclusive waiter; sync inherited only from 6.10).
    EpollWait { set: u32 },
    /// `FUTEX_WAIT` on futex `obj` (blocks until woken; a pending wake is consumed).
    FutexWait { obj: u32 },
    /// `FUTEX_WAKE` of up to `n` waiters of futex `obj` (non-sync).
    FutexWake { obj: u32, n: u32 },
    /// Create a task from `SimSetup::tasks[spec]` (fork/clone: WF_FORK placement).
    Spawn { spec: u32 },
    /// `wait()`/`pthread_join()` until every task this one spawned has exited.
    WaitChildren,

    // ---- measurement (zero time) -------------------------------------------------------------
    /// Record the current time under mark `id` (first and last time, and a count, are kept).
    Mark { id: u16 },
    /// Add one to run-wide counter `id` (e.g. transactions, bogo ops).
    Count { id: u16 },
    /// Start a latency measurement in the task's slot `slot`.
    LatStart { slot: u16 },
    /// End the measurement of `slot` and record it in run-wide histogram `hist`.
    LatEnd { slot: u16, hist: u16 },
}

/// A program and the static properties of the tasks running it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSpec {
    /// Command name, as `comm` (at most 15 bytes are kept, as the kernel does).
    pub comm: String,
    pub nice: i32,
    pub policy: Policy,
    /// A custom slice (`sched_attr.sched_runtime`), clamped to the kernel's range.
    pub slice_ns: Option<u64>,
    /// CPUs the task may run on; `None` means all.
    pub cpus: Option<Vec<u32>>,
    /// When the task is created, in simulated ns.
    pub start_ns: u64,
    /// `timer_slack_ns` (50 µs for SCHED_OTHER).
    pub timer_slack_ns: u64,
    pub ops: Vec<Op>,
    /// Number of loop counters the program uses.
    pub nr_slots: u16,
    /// Number of periodic timers the program uses (each task instance has its own).
    pub nr_timers: u16,
    /// Poll sets (lists of object indices) used by `Poll`/`EpollWait`.
    pub poll_sets: Vec<Vec<u32>>,
    /// Created at `start_ns` (false) or only by another task's `Spawn` (true).
    pub spawned: bool,
    /// Threads of one process share an address space: a switch-in of a task whose `mm` is the
    /// one its CPU has loaded (the last `mm` that ran there) costs `context_switch_ns`, else
    /// `context_switch_mm_ns`.
    pub mm: u32,
    /// The cgroup the workload puts the task in (rt-app `taskgroup`, `perf bench sched pipe
    /// -G`), an absolute path such as `/A`; the lab turns it into `group`.
    pub cgroup: Option<String>,
    /// The task group the simulation puts the task in (`SimSetup::groups`; 0 is the root).
    pub group: u32,
    /// A kernel thread (kworker, ksoftirqd, rcu_preempt): it has no address space of its own
    /// (switching to it borrows the CPU's loaded `mm`, `context_switch_ns`, and leaves it
    /// loaded for the next task), and it does not keep the simulation alive: a run ends when
    /// every other task has exited.
    pub kthread: bool,
    /// `wakee_flips` at creation for a task the workload's launcher starts (not `spawned`):
    /// fork copies the parent's `wakee_flips` (`dup_task_struct`; `__sched_fork` leaves it),
    /// so a benchmark's first process carries the count of the shell that started it, and its
    /// children carry it on. On a small LLC it decides `wake_wide()` for 1:N wakers.
    pub wakee_flips: u32,
}

impl TaskSpec {
    /// A SCHED_NORMAL nice-0 task running `ops` from time 0 on any CPU, with the default
    /// timer slack, in address space 0; loop and timer slots are sized from the program.
    /// Callers change the fields that differ.
    pub fn new(comm: impl Into<String>, ops: Vec<Op>) -> TaskSpec {
        let slots = |f: fn(&Op) -> Option<u16>| ops.iter().filter_map(f).map(|s| s + 1).max().unwrap_or(0);
        let nr_slots = slots(|op| match op {
            Op::Loop { slot, .. } => Some(*slot),
            _ => None,
        });
        let nr_timers = slots(|op| match op {
            Op::Timer { slot, .. } | Op::LoopUntil { slot, .. } => Some(*slot),
            _ => None,
        });
        TaskSpec {
            comm: comm.into(),
            nice: 0,
            policy: Policy::Normal,
            slice_ns: None,
            cpus: None,
            start_ns: 0,
            timer_slack_ns: 50_000,
            ops,
            nr_slots,
            nr_timers,
            poll_sets: Vec::new(),
            spawned: false,
            mm: 0,
            cgroup: None,
            group: 0,
            kthread: false,
            wakee_flips: 0,
        }
    }

    /// Checks that every jump target and slot is in range, so stepping cannot fail later.
    pub fn validate(&self) -> Result<(), String> {
        if !(-20..=19).contains(&self.nice) {
            return Err(format!("task `{}`: nice {} is outside -20..=19", self.comm, self.nice));
        }
        for (i, op) in self.ops.iter().enumerate() {
            match *op {
                Op::Loop { target, slot, count } if (target as usize > i || slot >= self.nr_slots || count == 0) => {
                    return Err(format!("task `{}`: bad loop at op {i}", self.comm));
                }
                // The body must hold an instruction: an empty one would spin without time passing.
                Op::LoopUntil { target, slot, .. } if (target as usize >= i || slot >= self.nr_timers) => {
                    return Err(format!("task `{}`: bad loop at op {i}", self.comm));
                }
                Op::LoopWhileEmpty { target, .. } if target as usize >= i => {
                    return Err(format!("task `{}`: bad loop at op {i}", self.comm));
                }
                Op::Timer { slot, period_ns, .. } if (slot >= self.nr_timers || period_ns == 0) => {
                    return Err(format!("task `{}`: bad timer at op {i}", self.comm));
                }
                Op::SetNice { nice } if !(-20..=19).contains(&nice) => {
                    return Err(format!("task `{}`: nice {nice} is outside -20..=19", self.comm));
                }
                _ => {}
            }
        }
        Ok(())
    }
}
