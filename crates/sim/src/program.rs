//! Task programs: what a simulated task does, as a small instruction list that workloads
//! (rt-app JSON, benchmark models) compile into.
//!
//! A program is flat: loops are `Loop` instructions that jump back, with per-task counters, so
//! a task's position is just `(pc, counters)` and stepping is O(1).

use crate::fair::Policy;

/// One instruction of a task program.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// Exit the task.
    Exit,
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
}

impl TaskSpec {
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
