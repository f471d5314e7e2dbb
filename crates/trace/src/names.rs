//! Names of the simulator's decision reasons as they appear in traces.

use sim::select::SelectReason;

/// The rule of `select_task_rq_fair` that placed a wakee, by the kernel function (or test)
/// that decided, in snake case.
pub fn select_reason_name(r: SelectReason) -> &'static str {
    match r {
        SelectReason::Pinned => "pinned",
        SelectReason::CurrentCpu => "wf_current_cpu",
        SelectReason::SlowPath => "find_dst_cpu",
        SelectReason::NoBalanceDomain => "no_balance_domain",
        SelectReason::SyncReciprocal => "sync_reciprocal",
        SelectReason::SisTarget => "sis_target_idle",
        SelectReason::SisPrev => "sis_prev_idle",
        SelectReason::SisKthreadStack => "sis_kthread_stack",
        SelectReason::SisRecent => "sis_recent_used_cpu",
        SelectReason::SisIdleCapacity(_) => "select_idle_capacity",
        SelectReason::SisCapacityNone => "select_idle_capacity_none",
        SelectReason::SisNoLlc => "sis_no_llc",
        SelectReason::SisIdleSmt(_) => "select_idle_smt",
        SelectReason::SisIdleCore(_) => "select_idle_core",
        SelectReason::SisIdleThread(_) => "select_idle_core_thread",
        SelectReason::SisIdleCpu(_) => "select_idle_cpu",
        SelectReason::SisPrevAff => "sis_prev_other_cluster",
        SelectReason::SisRecentAff => "sis_recent_other_cluster",
        SelectReason::SisNone => "sis_none_idle",
    }
}
