//! NOHZ idle balancing (fair.c v7.3.4): CPUs whose tick stopped are in `nohz.idle_cpus_mask`;
//! a busy CPU's tick decides in `nohz_balancer_kick()` whether to kick one of them (the ILB
//! CPU), which then balances on behalf of every idle CPU in `_nohz_idle_balance()`.

use super::IdleType;
use crate::engine::{Ev, Sim};
use crate::time::Nanos;
use crate::topology::Domains;

/// `NOHZ_*_KICK` flags (sched.h v7.3.4).
const NOHZ_BALANCE_KICK: u8 = 0x1;
const NOHZ_STATS_KICK: u8 = 0x2;
const NOHZ_NEXT_KICK: u8 = 0x4;
const NOHZ_KICK_MASK: u8 = NOHZ_BALANCE_KICK | NOHZ_STATS_KICK | NOHZ_NEXT_KICK;
/// `LOAD_AVG_PERIOD` in ms: how often blocked load of idle CPUs is refreshed.
const LOAD_AVG_PERIOD_MS: u64 = 32;

/// The global `nohz` structure and the per-CPU NOHZ fields of `struct rq`.
pub(in crate::engine) struct Nohz {
    /// `nohz.idle_cpus_mask`, one flag per CPU (`rq->nohz_tick_stopped` mirrors it).
    idle: Vec<bool>,
    nr_idle: u32,
    has_blocked_load: bool,
    needs_update: bool,
    next_balance: u64,
    next_blocked: u64,
    /// `rq->nohz_flags`: kicks sent to the CPU and not yet handled.
    flags: Vec<u8>,
    /// `rq->has_blocked_load`, `rq->last_blocked_load_update_tick`.
    rq_has_blocked: Vec<bool>,
    rq_blocked_tick: Vec<u64>,
    /// `sd_llc->shared->nr_busy_cpus`, by `sd_llc_id`.
    nr_busy: Vec<u32>,
}

impl Nohz {
    /// Every CPU starts idle with its tick stopped, so every CPU starts in the mask and no LLC
    /// has a busy CPU.
    pub(super) fn new(domains: &Domains) -> Nohz {
        let n = domains.nr_cpus() as usize;
        let nllc = (0..domains.nr_cpus()).map(|c| domains.sd_llc_id(c) + 1).max().unwrap_or(0);
        Nohz {
            idle: vec![true; n],
            nr_idle: n as u32,
            has_blocked_load: false,
            needs_update: false,
            next_balance: 0,
            next_blocked: 0,
            flags: vec![0; n],
            rq_has_blocked: vec![false; n],
            rq_blocked_tick: vec![0; n],
            nr_busy: vec![0; nllc as usize],
        }
    }

    /// `update_has_blocked_load_status()` after a blocked-load update of `cpu`.
    pub(super) fn blocked_updated(&mut self, cpu: u32, jiffies: u64, has_blocked: bool) {
        self.rq_blocked_tick[cpu as usize] = jiffies;
        if !has_blocked {
            self.rq_has_blocked[cpu as usize] = false;
        }
    }
}

impl Sim {
    /// `nohz_balance_enter_idle()` (fair.c v7.3.4): the tick of idle `cpu` stops.
    pub(in crate::engine) fn nohz_balance_enter_idle(&mut self, cpu: u32) {
        let llc = self.domains.sd_llc(cpu).map(|_| self.domains.sd_llc_id(cpu) as usize);
        let nohz = &mut self.lb.nohz;
        nohz.rq_has_blocked[cpu as usize] = true;
        if !nohz.idle[cpu as usize] && !self.domains.of(cpu).is_empty() {
            nohz.idle[cpu as usize] = true;
            nohz.nr_idle += 1;
            if let Some(l) = llc {
                nohz.nr_busy[l] -= 1;
            }
            nohz.needs_update = true;
        }
        nohz.has_blocked_load = true;
    }

    /// `nohz_balance_exit_idle()` (fair.c v7.3.4): at the first busy tick after idle.
    fn nohz_balance_exit_idle(&mut self, cpu: u32) {
        let llc = self.domains.sd_llc(cpu).map(|_| self.domains.sd_llc_id(cpu) as usize);
        let nohz = &mut self.lb.nohz;
        if !nohz.idle[cpu as usize] {
            return;
        }
        nohz.idle[cpu as usize] = false;
        nohz.nr_idle -= 1;
        if let Some(l) = llc {
            nohz.nr_busy[l] += 1;
        }
    }

    /// `nohz_balancer_kick()` (fair.c v7.3.4) from a busy CPU's tick.
    pub(super) fn nohz_balancer_kick(&mut self, cpu: u32) {
        let now = self.jiffies();
        self.nohz_balance_exit_idle(cpu);
        let mut flags = 0u8;
        if self.lb.nohz.has_blocked_load && now > self.lb.nohz.next_blocked {
            flags = NOHZ_STATS_KICK;
        }
        'out: {
            if now < self.lb.nohz.next_balance {
                break 'out;
            }
            if self.lb.nohz.nr_idle == 0 {
                return;
            }
            if self.rqs[cpu as usize].cfs.h_nr_queued >= 2 {
                flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
                break 'out;
            }
            // The reduced-capacity and SD_ASYM_PACKING kicks need what no topology here has.
            if self.domains.sd_asym_cpucapacity(cpu).is_some() {
                if self.misfit_task_load(cpu) != 0 {
                    flags |= NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
                }
                break 'out;
            }
            if self.domains.sd_llc(cpu).is_some() && self.lb.nohz.nr_busy[self.domains.sd_llc_id(cpu) as usize] > 1 {
                flags |= NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
            }
        }
        if self.lb.nohz.needs_update {
            flags |= NOHZ_NEXT_KICK;
        }
        if flags != 0 {
            self.kick_ilb(cpu, flags);
        }
    }

    /// `find_new_ilb()` from the kicking CPU `this_cpu`: 7.3.4 takes the first idle CPU of the
    /// mask on a wholly idle core, else the first idle CPU of the mask; 6.12.117 and 7.2.12 the
    /// first idle CPU of the mask other than `this_cpu`.
    fn find_new_ilb(&self, this_cpu: u32) -> Option<u32> {
        let prefer_idle_core = self.cfg.behavior.balance >= crate::config::BalanceVariant::V7_3;
        let mut fallback = None;
        for cpu in 0..self.rqs.len() as u32 {
            if !self.lb.nohz.idle[cpu as usize] {
                continue;
            }
            if !prefer_idle_core {
                if cpu != this_cpu && self.lb_idle_cpu(cpu) {
                    return Some(cpu);
                }
                continue;
            }
            if !self.lb_idle_cpu(cpu) {
                continue;
            }
            if self.domains.sched_smt_active() && !self.is_core_idle(cpu) {
                fallback.get_or_insert(cpu);
                continue;
            }
            return Some(cpu);
        }
        fallback
    }

    /// `kick_ilb()` (fair.c v7.3.4): an IPI to the ILB CPU, unless it has those kicks already.
    fn kick_ilb(&mut self, this_cpu: u32, flags: u8) {
        if flags & NOHZ_BALANCE_KICK != 0 {
            self.lb.nohz.next_balance = self.jiffies() + 1;
        }
        let Some(ilb) = self.find_new_ilb(this_cpu) else { return };
        let pending = &mut self.lb.nohz.flags[ilb as usize];
        if *pending & flags == flags {
            return;
        }
        let old = *pending;
        *pending |= flags;
        if old & NOHZ_KICK_MASK != 0 {
            return;
        }
        self.counters.nr_ipis += 1;
        let at = self.now + self.cost(self.costs.ipi_receive_ns);
        self.queue.push(Nanos(at), Ev::NohzBalance { cpu: ilb });
    }

    /// The kick reaches the ILB CPU: `nohz_csd_func()` then SCHED_SOFTIRQ's
    /// `nohz_idle_balance()` (fair.c v7.3.4), if the CPU is still idle.
    pub(in crate::engine) fn nohz_balance(&mut self, cpu: u32) {
        let flags = std::mem::take(&mut self.lb.nohz.flags[cpu as usize]);
        if !self.lb_idle_cpu(cpu) {
            return;
        }
        self.nohz_idle_balance(cpu, flags);
    }

    /// `_nohz_idle_balance()` (fair.c v7.3.4): for every CPU of the mask, starting after the
    /// ILB CPU and ending with it, refresh blocked load (STATS) and run its due domains as
    /// `CPU_IDLE` (BALANCE). Stops when a task arrives on the ILB CPU.
    fn nohz_idle_balance(&mut self, this_cpu: u32, flags: u8) {
        let now = self.jiffies();
        let hz = u64::from(self.cfg.hz);
        let mut next_balance = now + 60 * hz;
        let mut update_next = false;
        let mut has_blocked_load = false;
        if flags & NOHZ_STATS_KICK != 0 {
            self.lb.nohz.has_blocked_load = false;
        }
        if flags & NOHZ_NEXT_KICK != 0 {
            self.lb.nohz.needs_update = false;
        }
        let n = self.rqs.len() as u32;
        let mut aborted = false;
        for k in 1..=n {
            let b = (this_cpu + k) % n;
            if !self.lb.nohz.idle[b as usize] || !self.lb_idle_cpu(b) {
                continue;
            }
            if !self.lb_idle_cpu(this_cpu) && self.rqs[this_cpu as usize].cfs.h_nr_queued > 0 {
                if flags & NOHZ_STATS_KICK != 0 {
                    has_blocked_load = true;
                }
                if flags & NOHZ_NEXT_KICK != 0 {
                    self.lb.nohz.needs_update = true;
                }
                aborted = true;
                break;
            }
            if flags & NOHZ_STATS_KICK != 0 {
                has_blocked_load |= self.update_nohz_stats(b);
            }
            if now >= self.lb.cpus[b as usize].next_balance && flags & NOHZ_BALANCE_KICK != 0 {
                self.sched_balance_domains(b, IdleType::Idle);
            }
            let nb = self.lb.cpus[b as usize].next_balance;
            if next_balance > nb {
                next_balance = nb;
                update_next = true;
            }
        }
        if !aborted {
            if update_next {
                self.lb.nohz.next_balance = next_balance;
            }
            if flags & NOHZ_STATS_KICK != 0 {
                self.lb.nohz.next_blocked = now + self.msecs_to_jiffies(LOAD_AVG_PERIOD_MS);
            }
        }
        if has_blocked_load {
            self.lb.nohz.has_blocked_load = true;
        }
    }

    /// `update_nohz_stats()` (fair.c v7.3.4): true while `cpu` still has blocked load.
    fn update_nohz_stats(&mut self, cpu: u32) -> bool {
        let nohz = &self.lb.nohz;
        if !nohz.rq_has_blocked[cpu as usize] || !nohz.idle[cpu as usize] {
            return false;
        }
        if self.jiffies() <= nohz.rq_blocked_tick[cpu as usize] {
            return true;
        }
        self.update_blocked_averages(cpu);
        self.lb.nohz.rq_has_blocked[cpu as usize]
    }

    /// `nohz_newidle_balance()` + `nohz_run_idle_balance()` (fair.c v7.3.4): a CPU about to
    /// go idle refreshes the blocked load of the idle CPUs when it is due.
    pub(super) fn nohz_newidle_balance(&mut self, cpu: u32) {
        if self.lb.cpus[cpu as usize].avg_idle < self.cfg.sysctl.migration_cost_ns {
            return;
        }
        if !self.lb.nohz.has_blocked_load || self.jiffies() < self.lb.nohz.next_blocked {
            return;
        }
        if self.rqs[cpu as usize].cfs.h_nr_queued == 0 {
            self.nohz_idle_balance(cpu, NOHZ_STATS_KICK);
        }
    }
}
