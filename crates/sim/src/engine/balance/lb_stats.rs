//! Group statistics of a balance pass: `update_sg_lb_stats()`, `group_classify()`,
//! `update_sd_pick_busiest()` and `update_sd_lb_stats()` (fair.c v7.3.4; 6.12.117 computes
//! the same), plus SIS_UTIL's `update_idle_cpu_scan()` which rides on them.

use super::detach::LbEnv;
use super::{GroupInfo, IdleType};
use crate::engine::Sim;
use crate::features::Feature;
use crate::topology::{SCHED_CAPACITY_SCALE, SD_ASYM_CPUCAPACITY, SD_PREFER_SIBLING, SD_SHARE_CPUCAPACITY, SpanId};

const SCALE: u64 = SCHED_CAPACITY_SCALE as u64;

/// `enum group_type` (fair.c v7.3.4), by pulling priority. `group_asym_packing` is not
/// produced (see the module docs of `balance`); `group_llc_balance` only with CONFIG_SCHED_CACHE
/// active (7.2/7.3 on a machine with several LLCs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum GroupType {
    #[default]
    HasSpare,
    FullyBusy,
    MisfitTask,
    SmtBalance,
    Imbalanced,
    LlcBalance,
    Overloaded,
}

/// `struct sg_lb_stats` (fair.c v7.3.4).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SgLbStats {
    pub avg_load: u64,
    pub group_load: u64,
    pub group_capacity: u64,
    pub group_util: u64,
    pub group_runnable: u64,
    pub sum_nr_running: u32,
    pub sum_h_nr_running: u32,
    pub idle_cpus: u32,
    pub group_weight: u32,
    pub group_type: GroupType,
    pub group_smt_balance: bool,
    /// Tasks of the group should move to their preferred LLC, the balancing CPU's.
    pub group_llc_balance: bool,
    pub group_misfit_task_load: u64,
    /// Tasks queued in the group, outside the balancing CPU's LLC, that prefer that LLC.
    pub nr_pref_dst_llc: u32,
}

/// `struct sd_lb_stats` (fair.c v7.3.4); groups are named by their span.
#[derive(Clone, Copy, Debug)]
pub(super) struct SdLbStats {
    pub busiest: Option<SpanId>,
    pub local: SpanId,
    pub total_load: u64,
    pub total_capacity: u64,
    pub avg_load: u64,
    pub prefer_sibling: bool,
    pub busiest_stat: SgLbStats,
    pub local_stat: SgLbStats,
}

/// `capacity_greater()` (sched.h v7.3.4): more than ~5 % larger.
pub(super) fn capacity_greater(a: u64, b: u64) -> bool {
    a * 1024 > b * 1078
}

/// `fits_capacity()` (fair.c v7.3.4): 20 % headroom.
pub(super) fn fits_capacity(util: u64, capacity: u64) -> bool {
    util * 1280 < capacity * 1024
}

/// `group_has_capacity()` (fair.c v7.3.4).
fn group_has_capacity(imbalance_pct: u64, sgs: &SgLbStats) -> bool {
    if sgs.sum_nr_running < sgs.group_weight {
        return true;
    }
    if sgs.group_capacity * imbalance_pct < sgs.group_runnable * 100 {
        return false;
    }
    sgs.group_capacity * 100 > sgs.group_util * imbalance_pct
}

/// `group_is_overloaded()` (fair.c v7.3.4), without EAS.
fn group_is_overloaded(imbalance_pct: u64, sgs: &SgLbStats) -> bool {
    if sgs.sum_nr_running <= sgs.group_weight {
        return false;
    }
    sgs.group_capacity * 100 < sgs.group_util * imbalance_pct
        || sgs.group_capacity * imbalance_pct < sgs.group_runnable * 100
}

/// `group_classify()` (fair.c v7.3.4).
fn group_classify(imbalance_pct: u64, imbalanced: bool, sgs: &SgLbStats) -> GroupType {
    if group_is_overloaded(imbalance_pct, sgs) {
        GroupType::Overloaded
    } else if sgs.group_llc_balance {
        GroupType::LlcBalance
    } else if imbalanced {
        GroupType::Imbalanced
    } else if sgs.group_smt_balance {
        GroupType::SmtBalance
    } else if sgs.group_misfit_task_load != 0 {
        GroupType::MisfitTask
    } else if !group_has_capacity(imbalance_pct, sgs) {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
}

/// `smt_vs_nonsmt_groups()` (fair.c v7.3.4).
fn smt_vs_nonsmt_groups(a: &GroupInfo, b: &GroupInfo) -> bool {
    (a.flags & SD_SHARE_CPUCAPACITY) != (b.flags & SD_SHARE_CPUCAPACITY)
}

impl Sim {
    /// `rq->misfit_task_load` as `update_misfit_status()` (fair.c v7.3.4) leaves it for the
    /// running task: `max(task_h_load, 1)` when it does not fit this CPU's capacity, else 0.
    /// Computed when read rather than at pick and tick: the inputs are the same.
    pub(super) fn misfit_task_load(&mut self, cpu: u32) -> u64 {
        if !self.domains.sched_asym_cpucap_active() {
            return 0;
        }
        let Some(p) = self.rqs[cpu as usize].curr else { return 0 };
        let task = &self.tasks[p.idx()];
        let cap = self.capacity_of(cpu);
        let max_allowed = task.allowed.iter().map(|c| self.capacity_of(c)).max().unwrap_or(cap);
        if task.allowed.weight() == 1 || cap == max_allowed {
            return 0;
        }
        if fits_capacity(self.ents[p.idx()].pelt.task_util_est(), cap) {
            return 0;
        }
        let jiffies = self.jiffies();
        self.task_h_load(p, cpu, jiffies).max(1)
    }

    /// `update_sg_lb_stats()` (fair.c v7.3.4) for the group `span` of `env`'s domain.
    fn update_sg_lb_stats(&mut self, env: &LbEnv, span: SpanId, local: bool, sg_overloaded: &mut bool) -> SgLbStats {
        let info = self.group(span);
        let sd = &self.domains.of(env.this_cpu)[env.level];
        let (sd_flags, imbalance_pct) = (sd.flags, u64::from(sd.imbalance_pct));
        let balancing_at_rd = env.level + 1 == self.domains.of(env.this_cpu).len();
        let mut sgs = SgLbStats::default();
        let ncpus = self.domains.cpus(span).len();
        let cache_aware = self.lb.cache.active();
        let dst_llc = self.domains.sd_llc_id(env.dst_cpu);
        for k in 0..ncpus {
            let i = self.domains.cpus(span)[k];
            if self.lb_excluded(i) {
                continue;
            }
            let cap = self.capacity_of(i);
            let rq = &self.rqs[i as usize];
            sgs.group_load += self.load_pelt(i).cpu_load();
            sgs.group_util += rq.cfs.pelt.cpu_util_cfs(cap);
            sgs.group_runnable += rq.cfs.pelt.cpu_runnable();
            sgs.sum_h_nr_running += rq.cfs.h_nr_runnable;
            let nr_running = rq.cfs.h_nr_queued;
            sgs.sum_nr_running += nr_running;
            if cache_aware && self.domains.sd_llc_id(i) != dst_llc {
                sgs.nr_pref_dst_llc += self.llc_count(i, dst_llc);
            }
            if nr_running == 0 && self.lb_idle_cpu(i) {
                sgs.idle_cpus += 1;
                continue;
            }
            if balancing_at_rd && nr_running > 1 {
                *sg_overloaded = true;
            }
            if local {
                continue;
            }
            if sd_flags & SD_ASYM_CPUCAPACITY != 0 {
                let misfit = self.misfit_task_load(i);
                if misfit != 0 {
                    if balancing_at_rd {
                        *sg_overloaded = true;
                    }
                    if capacity_greater(self.capacity_of(env.dst_cpu), info.max_capacity)
                        && sgs.group_misfit_task_load < misfit
                    {
                        sgs.group_misfit_task_load = misfit;
                    }
                }
            }
            // The `sched_reduced_capacity()` branch needs a capacity below the CPU's own,
            // which never happens here (no RT/IRQ pressure).
        }
        sgs.group_capacity = info.capacity;
        sgs.group_weight = info.weight;
        if !local && env.idle.is_idle() && info.flags & SD_SHARE_CPUCAPACITY != 0 && sgs.sum_h_nr_running > 1 {
            // smt_balance()
            sgs.group_smt_balance = true;
        }
        if !local && self.llc_balance(env, &sgs, span) {
            sgs.group_llc_balance = true;
        }
        let imbalanced = self.lb.group_imbalance[span.0 as usize];
        sgs.group_type = group_classify(imbalance_pct, imbalanced, &sgs);
        self.record_sg_llc_stats(env, &sgs, span);
        if sgs.group_type == GroupType::Overloaded {
            sgs.avg_load = sgs.group_load * SCALE / sgs.group_capacity;
        }
        sgs
    }

    /// `update_sd_pick_busiest()` (fair.c v7.3.4): is group `sg` busier than the current pick?
    fn update_sd_pick_busiest(&self, env: &LbEnv, sds: &SdLbStats, sg: SpanId, sgs: &SgLbStats) -> bool {
        let busiest = &sds.busiest_stat;
        let info = self.group(sg);
        let sd_flags = self.domains.of(env.this_cpu)[env.level].flags;
        if sgs.sum_h_nr_running == 0 {
            return false;
        }
        if sd_flags & SD_ASYM_CPUCAPACITY != 0
            && sgs.group_type == GroupType::MisfitTask
            && (!env.dst_core_idle
                || !capacity_greater(self.capacity_of(env.dst_cpu), info.max_capacity)
                || sds.local_stat.group_type != GroupType::HasSpare)
        {
            return false;
        }
        if sd_flags & SD_ASYM_CPUCAPACITY != 0
            && sgs.group_type <= GroupType::FullyBusy
            && capacity_greater(info.min_capacity, self.capacity_of(env.dst_cpu))
        {
            return false;
        }
        if sgs.group_type != busiest.group_type {
            return sgs.group_type > busiest.group_type;
        }
        let busiest_info = sds.busiest.map(|b| self.group(b));
        let has_spare = |sgs: &SgLbStats| {
            !(sgs.idle_cpus > busiest.idle_cpus
                || (sgs.idle_cpus == busiest.idle_cpus && sgs.sum_nr_running <= busiest.sum_nr_running))
        };
        match sgs.group_type {
            GroupType::Overloaded => sgs.avg_load > busiest.avg_load,
            GroupType::LlcBalance => sgs.nr_pref_dst_llc > busiest.nr_pref_dst_llc,
            GroupType::Imbalanced => false,
            GroupType::MisfitTask => sgs.group_misfit_task_load > busiest.group_misfit_task_load,
            GroupType::SmtBalance if sgs.idle_cpus != 0 || busiest.idle_cpus != 0 => has_spare(sgs),
            GroupType::SmtBalance | GroupType::FullyBusy => {
                // avg_load is not computed for these types (always 0): the first group wins,
                // unless the current pick is an SMT group.
                if sgs.avg_load < busiest.avg_load {
                    return false;
                }
                !(sgs.avg_load == busiest.avg_load && busiest_info.is_some_and(|b| b.flags & SD_SHARE_CPUCAPACITY != 0))
            }
            GroupType::HasSpare => {
                if let Some(b) = busiest_info
                    && smt_vs_nonsmt_groups(&b, &info)
                {
                    return !(info.flags & SD_SHARE_CPUCAPACITY != 0 && sgs.sum_h_nr_running <= 1);
                }
                has_spare(sgs)
            }
        }
    }

    /// `update_sd_lb_stats()` (fair.c v7.3.4): every group of the domain, the local one first;
    /// at the top level it also sets or clears the root domain's overload flag, and at the LLC
    /// level it refreshes SIS_UTIL's scan depth.
    pub(super) fn update_sd_lb_stats(&mut self, env: &mut LbEnv) -> SdLbStats {
        env.dst_core_idle = !self.domains.sched_smt_active() || self.is_core_idle(env.dst_cpu);
        let ngroups = self.domains.nr_groups(&self.domains.of(env.this_cpu)[env.level]);
        let local_span = self.domains.group_span_at(&self.domains.of(env.this_cpu)[env.level], 0);
        let mut sds = SdLbStats {
            busiest: None,
            local: local_span,
            total_load: 0,
            total_capacity: 0,
            avg_load: 0,
            prefer_sibling: false,
            // init_sd_lb_stats(): the worst possible busiest, so the first candidate wins.
            busiest_stat: SgLbStats { idle_cpus: u32::MAX, ..SgLbStats::default() },
            local_stat: SgLbStats::default(),
        };
        let mut sum_util = 0u64;
        let mut sg_overloaded = false;
        for g in 0..ngroups {
            let span = self.domains.group_span_at(&self.domains.of(env.this_cpu)[env.level], g);
            let local = g == 0;
            let sgs = self.update_sg_lb_stats(env, span, local, &mut sg_overloaded);
            if local {
                sds.local_stat = sgs;
            } else if self.update_sd_pick_busiest(env, &sds, span, &sgs) {
                sds.busiest = Some(span);
                sds.busiest_stat = sgs;
            }
            sds.total_load += sgs.group_load;
            sds.total_capacity += sgs.group_capacity;
            sum_util += sgs.group_util;
        }
        if let Some(b) = sds.busiest {
            sds.prefer_sibling = self.group(b).flags & SD_PREFER_SIBLING != 0;
        }
        if env.level + 1 == self.domains.of(env.this_cpu).len() {
            // set_rd_overloaded()
            self.lb.overloaded = sg_overloaded;
        }
        self.update_idle_cpu_scan(env, sum_util);
        sds
    }

    /// `update_idle_cpu_scan()` (fair.c v7.3.4; 6.12.117 reaches the same object through
    /// `sd_llc_shared` after checking that the domain is the LLC): periodic, not newidle,
    /// balancing of the LLC domain stores SIS_UTIL's scan depth for `select_idle_cpu`.
    fn update_idle_cpu_scan(&mut self, env: &LbEnv, sum_util: u64) {
        if !self.params.feat(Feature::SIS_UTIL) || env.idle == IdleType::NewlyIdle {
            return;
        }
        if self.domains.sd_llc_level(env.this_cpu) != Some(env.level) {
            return;
        }
        let sd = &self.domains.of(env.this_cpu)[env.level];
        let nr = crate::select::update_idle_cpu_scan(sum_util, sd.span_weight, sd.imbalance_pct);
        let i = self.domains.sd_llc_id(env.this_cpu) as usize;
        if let Some(shared) = self.llc.get_mut(i) {
            shared.nr_idle_scan = nr;
        }
    }
}
