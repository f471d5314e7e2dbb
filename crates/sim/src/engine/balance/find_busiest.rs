//! `sched_balance_find_src_group()` with `calculate_imbalance()` and `sibling_imbalance()`,
//! and `sched_balance_find_src_rq()` (fair.c v7.3.4; identical in 6.12.117 apart from the
//! cache-aware `group_llc_balance` / `migrate_llc_task`, which it lacks).

use super::detach::{LbEnv, MigrationType};
use super::lb_stats::{GroupType, SdLbStats, SgLbStats, capacity_greater};
use crate::engine::Sim;
use crate::topology::{SCHED_CAPACITY_SCALE, SD_ASYM_CPUCAPACITY, SD_NUMA, SD_SHARE_LLC, SpanId};

const SCALE: u64 = SCHED_CAPACITY_SCALE as u64;

/// `sibling_imbalance()` (fair.c v7.3.4): tasks to move so both groups run as many tasks
/// per core.
fn sibling_imbalance(env: &LbEnv, local_cores: u32, busiest_cores: u32, busiest: &SgLbStats, local: &SgLbStats) -> i64 {
    if !env.idle.is_idle() || busiest.sum_nr_running == 0 {
        return 0;
    }
    let (nb, nl) = (i64::from(busiest_cores), i64::from(local_cores));
    if nb == nl {
        return (i64::from(busiest.sum_nr_running) - i64::from(local.sum_nr_running)).max(0);
    }
    let mut imbalance = (nl * i64::from(busiest.sum_nr_running) - nb * i64::from(local.sum_nr_running)).max(0);
    imbalance = (2 * imbalance + nl + nb) / (nl + nb);
    if imbalance <= 1 && local.sum_nr_running == 0 && busiest.sum_nr_running > 1 {
        imbalance = 2;
    }
    imbalance
}

impl Sim {
    /// `calculate_imbalance()` (fair.c v7.3.4): the migration type and the amount.
    fn calculate_imbalance(&self, env: &mut LbEnv, sds: &mut SdLbStats) {
        let sd = &self.domains.of(env.this_cpu)[env.level];
        let (local, busiest) = (&mut sds.local_stat, &sds.busiest_stat);
        match busiest.group_type {
            GroupType::MisfitTask => {
                if sd.flags & SD_ASYM_CPUCAPACITY != 0 {
                    env.migration_type = MigrationType::Misfit;
                    env.imbalance = 1;
                } else {
                    env.migration_type = MigrationType::Load;
                    env.imbalance = busiest.group_misfit_task_load as i64;
                }
                return;
            }
            GroupType::SmtBalance | GroupType::Imbalanced => {
                env.migration_type = MigrationType::Task;
                env.imbalance = 1;
                return;
            }
            GroupType::LlcBalance => {
                // Move one task that prefers the local LLC.
                env.migration_type = MigrationType::Llc;
                env.imbalance = 1;
                return;
            }
            _ => {}
        }
        if local.group_type == GroupType::HasSpare {
            if busiest.group_type > GroupType::FullyBusy && sd.flags & SD_SHARE_LLC == 0 {
                env.migration_type = MigrationType::Util;
                env.imbalance = (local.group_capacity.max(local.group_util) - local.group_util) as i64;
                if env.idle.is_idle() && env.imbalance == 0 {
                    env.migration_type = MigrationType::Task;
                    env.imbalance = 1;
                }
                return;
            }
            env.migration_type = MigrationType::Task;
            if busiest.group_weight == 1 || sds.prefer_sibling {
                #[allow(clippy::expect_used, reason = "called only after find_busiest_group chose a busiest group")]
                let (lc, bc) = (self.group(sds.local).cores, self.group(sds.busiest.expect("busiest")).cores);
                env.imbalance = sibling_imbalance(env, lc, bc, busiest, local);
            } else {
                env.imbalance = (i64::from(local.idle_cpus) - i64::from(busiest.idle_cpus)).max(0);
            }
            if sd.flags & SD_NUMA != 0 {
                let imb_numa_nr = self.lb.cpus[env.this_cpu as usize].sd[env.level].imb_numa_nr;
                env.imbalance = i64::from(crate::select::adjust_numa_imbalance(
                    env.imbalance as u32,
                    local.sum_nr_running + 1,
                    imb_numa_nr,
                ));
            }
            env.imbalance >>= 1;
            return;
        }
        if local.group_type < GroupType::Overloaded {
            local.avg_load = local.group_load * SCALE / local.group_capacity;
            if local.avg_load >= busiest.avg_load {
                env.imbalance = 0;
                return;
            }
            sds.avg_load = sds.total_load * SCALE / sds.total_capacity;
            if local.avg_load >= sds.avg_load {
                env.imbalance = 0;
                return;
            }
        }
        env.migration_type = MigrationType::Load;
        let above = busiest.avg_load.saturating_sub(sds.avg_load) * busiest.group_capacity;
        let below = sds.avg_load.saturating_sub(local.avg_load) * local.group_capacity;
        env.imbalance = (above.min(below) / SCALE) as i64;
    }

    /// `sched_balance_find_src_group()` (fair.c v7.3.4): the busiest group if there is an
    /// imbalance worth fixing, with `env.imbalance` and `env.migration_type` set.
    pub(super) fn find_src_group(&mut self, env: &mut LbEnv) -> Option<SpanId> {
        let mut sds = self.update_sd_lb_stats(env);
        let Some(busiest_span) = sds.busiest else {
            env.imbalance = 0;
            return None;
        };
        let busiest = sds.busiest_stat;
        let local = sds.local_stat;
        let force = matches!(busiest.group_type, GroupType::MisfitTask | GroupType::Imbalanced);
        if !force {
            let balanced = 'check: {
                if local.group_type > busiest.group_type {
                    break 'check true;
                }
                if local.group_type == GroupType::Overloaded {
                    if local.avg_load >= busiest.avg_load {
                        break 'check true;
                    }
                    sds.avg_load = sds.total_load * SCALE / sds.total_capacity;
                    if local.avg_load >= sds.avg_load {
                        break 'check true;
                    }
                    let pct = u64::from(self.domains.of(env.this_cpu)[env.level].imbalance_pct);
                    if 100 * busiest.avg_load <= pct * local.avg_load {
                        break 'check true;
                    }
                }
                let (lc, bc) = (self.group(sds.local).cores, self.group(busiest_span).cores);
                if sds.prefer_sibling
                    && local.group_type == GroupType::HasSpare
                    && (busiest.group_type == GroupType::LlcBalance
                        || sibling_imbalance(env, lc, bc, &busiest, &local) > 1)
                {
                    break 'check false;
                }
                if busiest.group_type != GroupType::Overloaded {
                    if !env.idle.is_idle() {
                        break 'check true;
                    }
                    let local_info = self.group(sds.local);
                    let busiest_info = self.group(busiest_span);
                    if busiest.group_type == GroupType::SmtBalance
                        && (local_info.flags ^ busiest_info.flags) & crate::topology::SD_SHARE_CPUCAPACITY != 0
                    {
                        break 'check false;
                    }
                    if busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                        break 'check true;
                    }
                    if busiest.sum_h_nr_running == 1 {
                        break 'check true;
                    }
                }
                false
            };
            if balanced {
                env.imbalance = 0;
                return None;
            }
        }
        self.calculate_imbalance(env, &mut sds);
        (env.imbalance != 0).then_some(busiest_span)
    }

    /// `sched_balance_find_src_rq()` (fair.c v7.3.4): the busiest runqueue of the group for
    /// the migration type.
    pub(super) fn find_src_rq(&mut self, env: &LbEnv, group: SpanId) -> Option<u32> {
        let sd_flags = self.domains.of(env.this_cpu)[env.level].flags;
        let mut busiest = None;
        let (mut busiest_util, mut busiest_load, mut busiest_capacity, mut busiest_nr) = (0u64, 0u64, 1u64, 0u32);
        let mut busiest_pref_llc = 0u32;
        let dst_llc = self.domains.sd_llc_id(env.dst_cpu);
        let n = self.domains.cpus(group).len();
        for k in 0..n {
            let i = self.domains.cpus(group)[k];
            if self.lb_excluded(i) {
                continue;
            }
            let nr_running = self.rqs[i as usize].cfs.h_nr_runnable;
            if nr_running == 0 {
                continue;
            }
            let capacity = self.capacity_of(i);
            if sd_flags & SD_ASYM_CPUCAPACITY != 0 && nr_running == 1 {
                let cluster_equal_cap =
                    self.domains.sched_cluster_active() && self.capacity_of(env.dst_cpu) == capacity;
                let smt_degraded_cap = self.domains.sched_smt_active() && !self.is_core_idle(i);
                if !smt_degraded_cap && !cluster_equal_cap && !capacity_greater(self.capacity_of(env.dst_cpu), capacity)
                {
                    continue;
                }
            }
            match env.migration_type {
                MigrationType::Load => {
                    let load = self.load_pelt(i).cpu_load();
                    // A lone task heavier than the imbalance stays, unless its CPU lost
                    // capacity (`check_cpu_capacity`, never the case here).
                    if nr_running == 1 && load as i64 > env.imbalance {
                        continue;
                    }
                    if load * busiest_capacity > busiest_load * capacity {
                        busiest_load = load;
                        busiest_capacity = capacity;
                        busiest = Some(i);
                    }
                }
                MigrationType::Util => {
                    let util = self.rqs[i as usize].cfs.pelt.cpu_util_cfs_boost(capacity);
                    if nr_running <= 1 {
                        continue;
                    }
                    if busiest_util < util {
                        busiest_util = util;
                        busiest = Some(i);
                    }
                }
                MigrationType::Task => {
                    if busiest_nr < nr_running {
                        busiest_nr = nr_running;
                        busiest = Some(i);
                    }
                }
                MigrationType::Misfit => {
                    let misfit = self.misfit_task_load(i);
                    if misfit > busiest_load {
                        busiest_load = misfit;
                        busiest = Some(i);
                    }
                }
                MigrationType::Llc => {
                    let this_pref_llc = self.llc_count(i, dst_llc);
                    if busiest_pref_llc < this_pref_llc {
                        busiest_pref_llc = this_pref_llc;
                        busiest = Some(i);
                    }
                }
            }
        }
        busiest
    }
}
