//! The scheduling entity of a fair task (`struct sched_entity`, include/linux/sched.h v7.3.4).

use super::tree::NodeIdx;
use super::weight::{WEIGHT_IDLEPRIO, nice_to_weight, scale_load, scale_load_down};
use crate::pelt::TaskPelt;

/// The fair-class scheduling policy of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_NORMAL (SCHED_OTHER).
    Normal,
    /// SCHED_BATCH: never wakeup-preempts.
    Batch,
    /// SCHED_IDLE: weight 3, yields to any non-idle wakee.
    Idle,
}

impl Policy {
    /// The scaled load weight for `nice` under this policy (`set_load_weight()`, core.c).
    pub fn weight(self, nice: i32) -> u64 {
        match self {
            Policy::Idle => scale_load(WEIGHT_IDLEPRIO),
            _ => nice_to_weight(nice),
        }
    }
}

/// Per-task EEVDF state (spec §2.1). Virtual times are wrapping `u64`.
#[derive(Clone, Copy, Debug)]
pub struct SchedEntity {
    /// `se.load.weight`, scaled.
    pub load_weight: u64,
    /// 7.3 `se.h_load.weight`: the weight all EEVDF arithmetic uses (root group: = load).
    pub h_weight: u64,
    pub vruntime: u64,
    pub deadline: u64,
    /// The deadline is stored relative to vruntime (after a non-sleep dequeue).
    pub rel_deadline: bool,
    /// The request size `r`, in wall ns.
    pub slice: u64,
    pub custom_slice: bool,
    /// Saved virtual lag `V - v` while not queued (and for delayed entities).
    pub vlag: i64,
    /// End of slice protection.
    pub vprot: u64,
    /// Queued (incl. curr and delayed entities). For a fair task this is also the core's
    /// `p->on_rq != 0`.
    pub on_rq: bool,
    pub sched_delayed: bool,
    pub exec_start: u64,
    pub sum_exec_runtime: u64,
    pub prev_sum_exec_runtime: u64,
    pub policy: Policy,
    /// PELT averages of the task (`se.avg`).
    pub pelt: TaskPelt,
    /// Handle of this entity's node while it is in the timeline.
    pub node: NodeIdx,
    pub in_tree: bool,
    /// The task's group (`fair/group.rs`): 0 is the root group.
    pub group: u32,
}

impl SchedEntity {
    /// `__sched_fork()` (core.c v7.3.4): a fresh entity with zero vruntime and lag.
    pub fn new(policy: Policy, nice: i32, custom_slice_ns: Option<u64>) -> SchedEntity {
        let w = policy.weight(nice);
        SchedEntity {
            load_weight: w,
            h_weight: w,
            vruntime: 0,
            deadline: 0,
            rel_deadline: false,
            slice: custom_slice_ns.unwrap_or(0),
            custom_slice: custom_slice_ns.is_some(),
            vlag: 0,
            vprot: 0,
            on_rq: false,
            sched_delayed: false,
            exec_start: 0,
            sum_exec_runtime: 0,
            prev_sum_exec_runtime: 0,
            policy,
            pelt: TaskPelt::new(scale_load_down(w)),
            node: 0,
            in_tree: false,
            group: 0,
        }
    }
}

/// `sched_attr.sched_runtime` bounds for a custom slice (kernel/sched/syscalls.c v7.3.4).
pub const CUSTOM_SLICE_MIN_NS: u64 = 100_000;
pub const CUSTOM_SLICE_MAX_NS: u64 = 100_000_000;

/// Clamps a requested custom slice the way `__setscheduler_params()` does.
pub fn clamp_custom_slice(ns: u64) -> u64 {
    ns.clamp(CUSTOM_SLICE_MIN_NS, CUSTOM_SLICE_MAX_NS)
}
