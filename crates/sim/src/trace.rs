//! The engine's trace stream: the scheduler tracepoints of the kernel (`sched_switch`,
//! `sched_waking`, `sched_wakeup`, `sched_wakeup_new`, `sched_migrate_task`,
//! `sched_process_fork`, `sched_process_exit`) plus schedlab's decision records (why a wakeup
//! preempted or not, where a wakee was placed) with the EEVDF state behind them.
//!
//! The core only calls a [`TraceSink`]; writers (ftrace text, Perfetto) live outside it. Events
//! are passed by reference and not kept, so memory does not grow with simulated time.

use crate::fair::WakeupReason;
use crate::select::SelectReason;

/// A task as tracepoints name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRef<'a> {
    pub pid: u32,
    pub comm: &'a str,
    /// Kernel priority: 120 + nice for fair tasks.
    pub prio: i32,
}

/// `prev_state` of `sched_switch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrevState {
    /// Still runnable, switched out by `schedule()`: preempted on the way back to user mode,
    /// or yielded (`R`).
    Running,
    /// Preempted inside the kernel (`SM_PREEMPT`: the kernel prints `R+`, TASK_REPORT_MAX).
    Preempted,
    /// Asleep (`S`).
    Sleeping,
    /// Asleep `TASK_UNINTERRUPTIBLE` (`D`): on a mutex.
    Uninterruptible,
    /// Exited (`X` / `Z`).
    Dead,
}

/// The EEVDF state of an entity when a decision was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EevdfState {
    pub vruntime: u64,
    pub deadline: u64,
    /// `V − vruntime` (positive: owed service).
    pub lag: i64,
    pub eligible: bool,
    pub slice: u64,
    pub vprot: u64,
    pub delayed: bool,
    pub buddy: bool,
}

/// One trace event. `cpu` is the CPU the event is recorded on.
#[derive(Clone, Copy, Debug)]
pub enum TraceEvent<'a> {
    Switch {
        prev: TaskRef<'a>,
        prev_state: PrevState,
        next: TaskRef<'a>,
    },
    Waking {
        task: TaskRef<'a>,
        target_cpu: u32,
    },
    Wakeup {
        task: TaskRef<'a>,
        target_cpu: u32,
    },
    WakeupNew {
        task: TaskRef<'a>,
        target_cpu: u32,
    },
    Migrate {
        task: TaskRef<'a>,
        orig_cpu: u32,
        dest_cpu: u32,
    },
    Fork {
        parent: TaskRef<'a>,
        child: TaskRef<'a>,
    },
    Exit {
        task: TaskRef<'a>,
    },
    /// The wakeup-preemption check for `wakee` against `curr` on `cpu`.
    WakeupPreempt {
        curr: TaskRef<'a>,
        wakee: TaskRef<'a>,
        preempt: bool,
        reason: WakeupReason,
        curr_state: EevdfState,
        wakee_state: EevdfState,
    },
    /// Where `select_task_rq_fair` placed a wakee, and the rule that decided.
    Placement {
        task: TaskRef<'a>,
        prev_cpu: u32,
        target_cpu: u32,
        sync: bool,
        reason: SelectReason,
    },
    /// A timer interrupt on a busy `cpu` (`hrtimer_expire_entry`): `function` is `hrtick`
    /// (the slice-end timer) or `tick_nohz_handler` (the tick), as 6.12-7.3 name them.
    TimerExpire {
        function: &'static str,
    },
    /// Right after `sched_wakeup`: the lag the woken task carries, its `se->vlag` (virtual ns),
    /// as saved when it last left the runqueue and placed from at this enqueue. In a real guest
    /// a BTF tracepoint probe on `sched_wakeup` reads the same field (`schedlab_wakeup_lag`).
    WakeupLag {
        pid: u32,
        vlag: i64,
    },
    /// Right after `sched_switch`: the switched-out task's `se->vlag` and `se->sched_delayed`
    /// (`schedlab_switch_lag`). For a task that went to sleep, the lag it left with (kept
    /// queued as delayed when it was not eligible); for a preempted one, a stale value.
    SwitchLag {
        prev_pid: u32,
        vlag: i64,
        delayed: bool,
    },
    /// Right after `sched_waking`: the wakee's `wakee_flips` as `select_task_rq_fair()` reads
    /// it for `wake_wide()` (`schedlab_waking_flips`; a BTF tracepoint probe on `sched_waking`
    /// reads the same field in a real guest).
    WakingFlips {
        pid: u32,
        flips: u32,
    },
}

/// Receives the trace stream of a simulation.
pub trait TraceSink {
    /// One event at simulated time `ts_ns` on `cpu`.
    fn event(&mut self, ts_ns: u64, cpu: u32, ev: &TraceEvent<'_>);
}

/// The idle task as tracepoints show it on each CPU (`swapper/N`, pid 0, prio 120).
pub fn idle_task(cpu: u32, buf: &mut String) -> TaskRef<'_> {
    buf.clear();
    buf.push_str("swapper/");
    buf.push_str(&cpu.to_string());
    TaskRef { pid: 0, comm: buf.as_str(), prio: 120 }
}
