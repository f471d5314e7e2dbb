//! The runqueue and sched-domain counters of `/proc/schedstat` (`struct rq` and `struct
//! sched_domain` schedstat fields, printed by `show_schedstat()` in kernel/sched/stats.c), kept
//! where the kernel increments them (v7.3.4; v6.12.117 has the same increments, with one
//! `lb_imbalance` where 7.3.4 splits it by migration type):
//!
//! - `sched_count`: every `__schedule()` (`schedule_debug()`); `sched_goidle`: the idle task
//!   set up as next (`set_next_task_idle()`); `yld_count`: `do_sched_yield()`;
//! - `ttwu_count`, `ttwu_local` on the waker's runqueue (`this_rq()` in `ttwu_stat()`), and
//!   for a remote wakeup `ttwu_wake_remote` on the waker CPU's lowest domain spanning the
//!   wakee's CPU; `ttwu_move_affine` on the domain `wake_affine()` chose the waker's CPU in;
//! - per idle type (`enum cpu_idle_type`: busy, idle, newly idle) the `sched_balance_rq()`
//!   outcomes (`lb_count`, `lb_balanced`, `lb_failed`, `lb_nobusyg`, `lb_nobusyq`, the
//!   imbalance by migration type), `lb_gained` (`detach_tasks()`, `detach_one_task()`) and
//!   `lb_hot_gained` (`can_migrate_task()` taking a cache-hot task after enough failures);
//! - `alb_count`, `alb_pushed`, `alb_failed` (`active_load_balance_cpu_stop()`).
//!
//! Not kept: the `sched_info` sums of the cpu line (`rq_cpu_time`, `run_delay`, `pcount`) and
//! `ttwu_move_balance` (never incremented since v2.6.x; always 0).

/// The idle types in the kernel's order (`__CPU_NOT_IDLE`, `CPU_IDLE`, `CPU_NEWLY_IDLE`), the
/// column order of schedstat v16 and v17.
pub const IDLE_TYPES: [&str; 3] = ["busy", "idle", "newidle"];

/// One runqueue's counters (the `cpuN` line, without the `sched_info` sums).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuCounters {
    pub yld_count: u64,
    pub sched_count: u64,
    pub sched_goidle: u64,
    pub ttwu_count: u64,
    pub ttwu_local: u64,
}

/// `sched_balance_rq()` counters of one domain for one idle type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LbCounters {
    pub count: u64,
    pub balanced: u64,
    pub failed: u64,
    /// `lb_imbalance_load`, `_util`, `_task`, `_misfit` (v17; v16 sums them in one field). The
    /// LLC migration type of CONFIG_SCHED_CACHE adds to none: 7.3.4's
    /// `update_lb_imbalance_stat()` breaks on `migrate_llc_task`.
    pub imbalance: [u64; 4],
    pub gained: u64,
    pub hot_gained: u64,
    pub nobusyq: u64,
    pub nobusyg: u64,
}

/// One sched domain's counters (one `domainN` line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DomainCounters {
    /// Indexed by idle type ([`IDLE_TYPES`]).
    pub lb: [LbCounters; 3],
    pub alb_count: u64,
    pub alb_failed: u64,
    pub alb_pushed: u64,
    pub ttwu_wake_remote: u64,
    pub ttwu_move_affine: u64,
}

/// The counters of a whole machine: per CPU, and per CPU per domain level (lowest first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedstat {
    pub cpus: Vec<CpuCounters>,
    pub domains: Vec<Vec<DomainCounters>>,
}

/// `sched_balance_rq()` counters of one idle type, summed over domains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Balance {
    pub count: u64,
    pub balanced: u64,
    pub failed: u64,
    pub gained: u64,
    pub hot_gained: u64,
}

/// Counters summed over all CPUs (and, for the domain ones, over their domains): what a
/// system-wide `/proc/schedstat` delta around a run gives, read from a guest or kept by the
/// model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub sched_count: u64,
    pub sched_goidle: u64,
    pub ttwu_count: u64,
    pub ttwu_local: u64,
    /// Indexed busy, idle, newly idle (whatever the version's column order).
    pub balance: [Balance; 3],
    pub alb_pushed: u64,
    pub ttwu_wake_remote: u64,
    pub ttwu_move_affine: u64,
}

impl Schedstat {
    /// Zeroed counters for `levels[cpu]` domains on each CPU.
    pub fn new(levels: impl IntoIterator<Item = usize>) -> Schedstat {
        let domains: Vec<Vec<DomainCounters>> =
            levels.into_iter().map(|n| vec![DomainCounters::default(); n]).collect();
        Schedstat { cpus: vec![CpuCounters::default(); domains.len()], domains }
    }

    /// The machine's sums.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for c in &self.cpus {
            t.sched_count += c.sched_count;
            t.sched_goidle += c.sched_goidle;
            t.ttwu_count += c.ttwu_count;
            t.ttwu_local += c.ttwu_local;
        }
        for d in self.domains.iter().flatten() {
            for (b, lb) in t.balance.iter_mut().zip(&d.lb) {
                b.count += lb.count;
                b.balanced += lb.balanced;
                b.failed += lb.failed;
                b.gained += lb.gained;
                b.hot_gained += lb.hot_gained;
            }
            t.alb_pushed += d.alb_pushed;
            t.ttwu_wake_remote += d.ttwu_wake_remote;
            t.ttwu_move_affine += d.ttwu_move_affine;
        }
        t
    }
}

impl Totals {
    /// Named values for tables and JSON, in a fixed order.
    pub fn named(&self) -> Vec<(&'static str, u64)> {
        let [busy, idle, newidle] = self.balance;
        vec![
            ("sched_count", self.sched_count),
            ("sched_goidle", self.sched_goidle),
            ("ttwu_count", self.ttwu_count),
            ("ttwu_local", self.ttwu_local),
            ("ttwu_wake_remote", self.ttwu_wake_remote),
            ("ttwu_move_affine", self.ttwu_move_affine),
            ("lb_count_busy", busy.count),
            ("lb_count_idle", idle.count),
            ("lb_count_newidle", newidle.count),
            ("lb_gained", self.lb_gained()),
            ("lb_failed", self.lb_failed()),
            ("alb_pushed", self.alb_pushed),
        ]
    }

    /// `sched_balance_rq()` passes of every idle type.
    pub fn lb_count(&self) -> u64 {
        self.balance.iter().map(|b| b.count).sum()
    }

    /// Tasks moved by balancing, passes and active balance alike.
    pub fn lb_gained(&self) -> u64 {
        self.balance.iter().map(|b| b.gained).sum()
    }

    /// Passes that found an imbalance and moved nothing.
    pub fn lb_failed(&self) -> u64 {
        self.balance.iter().map(|b| b.failed).sum()
    }

    /// Cache-hot tasks moved because balancing had failed often enough.
    pub fn lb_hot_gained(&self) -> u64 {
        self.balance.iter().map(|b| b.hot_gained).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_sum_cpus_domains_and_idle_types() {
        let mut s = Schedstat::new([2, 1]);
        s.cpus[0].sched_goidle = 3;
        s.cpus[1].sched_goidle = 4;
        s.cpus[1].ttwu_local = 5;
        s.domains[0][1].lb[2].count = 7;
        s.domains[0][1].lb[2].gained = 1;
        s.domains[1][0].lb[0].count = 2;
        s.domains[1][0].lb[1].gained = 6;
        s.domains[1][0].ttwu_move_affine = 9;
        let t = s.totals();
        assert_eq!((t.sched_goidle, t.ttwu_local, t.ttwu_move_affine), (7, 5, 9));
        assert_eq!((t.balance[0].count, t.balance[2].count, t.lb_count()), (2, 7, 9));
        assert_eq!(t.lb_gained(), 7);
        assert_eq!(t.named().iter().find(|(n, _)| *n == "lb_gained").map(|x| x.1), Some(7));
    }
}
