//! The `[[vm]]` tables of a sweep plan (`lab::plan::VmPlan`): each is one `compare --vm`, its
//! boots numbered after the model's runs (`Plan::vm_first_index`) so a shard takes every boot
//! whose number is `I` modulo `N`, as it takes model runs. Every measured run goes to the
//! results store as its boot finishes, keyed as `compare --vm` keys it
//! ([`crate::compare::run_key`]); a boot whose run is stored is not booted again, so an
//! interrupted sweep resumes where it stopped.
//!
//! Every table is checked (guest SPECs, topology, kernel argument) before anything boots.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use lab::compare::CompareOptions;
use lab::plan::{Plan, Shard, VmPlan};
use lab::store::Store;

use crate::compare::{Boots, CompareRequest, boot_rounds, variants};
use crate::{Accel, KernelSource, SessionOptions, VmError, parse_topology};

/// What the vm part of a sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VmSweepReport {
    /// Boots in all the plan's `[[vm]]` tables.
    pub planned: usize,
    /// Boots in this shard.
    pub in_shard: usize,
    /// Boots of this shard whose run was stored already (not booted).
    pub already: usize,
    /// Runs stored now.
    pub stored: usize,
    /// Boots not made because of an interrupt.
    pub cancelled: usize,
}

/// How the guests are booted: the schedlab binary to put in them, and whether to echo their
/// consoles.
pub struct SweepOptions {
    pub schedlab_bin: PathBuf,
    pub verbose: bool,
}

/// A `[[vm]]` table as the request `compare --vm` would make of the same flags.
pub fn request(t: &VmPlan, opts: &SweepOptions) -> Result<CompareRequest, VmError> {
    let in_table = |e: VmError| match e {
        VmError::Usage(m) => VmError::Usage(format!("[[vm]] `{}`: {m}", t.name)),
        e => e,
    };
    let accel = match t.accel.as_str() {
        "kvm" => Accel::Kvm,
        "tcg" => Accel::Tcg,
        _ => Accel::Auto,
    };
    Ok(CompareRequest {
        session: SessionOptions {
            kernel: KernelSource::from_arg(&t.vm),
            topology: parse_topology(&t.topology).map_err(in_table)?,
            accel,
            timeout: Duration::from_secs(t.timeout_s),
            schedlab_bin: opts.schedlab_bin.clone(),
            verbose: opts.verbose,
            replug: t.replug,
            builtin: t.builtin,
            // `trace = true`: the buffer of `compare --vm --trace`.
            trace_kb: t.trace.then_some(crate::guest::TRACE_KB),
        },
        vm_arg: t.vm.clone(),
        base: t.base.clone(),
        variants: t.variants.clone(),
        runs: t.runs,
        warmup: t.warmup,
        seed: t.seed,
        workload: t.workload.clone(),
        // Significance is for the table `compare --from` draws, not for storing.
        options: CompareOptions { alpha: 0.05, min_effect_pct: 1.0 },
        trace_out: None,
    })
}

/// Boots the plan's `[[vm]]` tables (the boots of `shard`, all without one) into `store`.
pub fn sweep(
    plan: &Plan,
    store: &Store,
    shard: Option<Shard>,
    opts: &SweepOptions,
    cancel: &AtomicBool,
    note: &(dyn Fn(&str) + Sync),
) -> Result<VmSweepReport, VmError> {
    let mut checked = Vec::new();
    for t in &plan.vm {
        let req = request(t, opts)?;
        let in_table = |e| match e {
            VmError::Usage(m) => VmError::Usage(format!("[[vm]] `{}`: {m}", t.name)),
            e => e,
        };
        crate::session::check_workload(&req.workload, &req.session.topology).map_err(in_table)?;
        let all = variants(&req).map_err(in_table)?;
        checked.push((req, all));
    }
    let mut report = VmSweepReport { planned: plan.total_count() - plan.run_count(), ..VmSweepReport::default() };
    for (t, (req, all)) in checked.iter().enumerate() {
        let first = plan.vm_first_index(t);
        let only = |i: usize| shard.is_none_or(|s| s.contains(first + i));
        report.in_shard += (0..plan.vm[t].boot_count()).filter(|&i| only(i)).count();
        let done = boot_rounds(req, all, &Boots { store: Some(store), only: &only, cancel: Some(cancel) }, note)?;
        report.already += done.already;
        report.cancelled += done.cancelled;
        report.stored += done.samples.len() - done.already;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Plan {
        lab::plan::parse_plan(text, "plan.toml").unwrap()
    }

    const TWO_TABLES: &str = "seeds = 2\nworkloads = [\"pipe -l 100\"]\n[[variant]]\nspec = \"v7.3\"\n\
        [[vm]]\nvm = \"linux-image-6.12.117+deb13-amd64\"\nvariant = [\"NO_WAKEUP_PREEMPTION\"]\nruns = 2\n\
        workload = \"hackbench -p -g 1 -l 20\"\n\
        [[vm]]\nname = \"mine\"\nvm = \"/boot/my-bzImage\"\ntopology = \"smp:4\"\nbase = \"NO_PLACE_LAG\"\n\
        variant = [\"PLACE_LAG\", \"preempt=full\"]\nruns = 1\nwarmup = 0\nseed = 7\naccel = \"tcg\"\ntimeout = 60\ntrace = true\n\
        workload = \"pipe --classic -l 500\"\n";

    #[test]
    fn vm_tables_become_compare_vm_requests() {
        let p = plan(TWO_TABLES);
        assert_eq!(p.vm.len(), 2);
        // Boots follow the model's 2 runs: 2 rounds x 2 variants, then 1 round x 3 variants.
        assert_eq!((p.run_count(), p.vm_first_index(1), p.total_count()), (2, 6, 9));
        let opts = SweepOptions { schedlab_bin: "/bin/true".into(), verbose: false };
        let r = request(&p.vm[0], &opts).unwrap();
        assert_eq!(r.session.kernel, KernelSource::DebianPackage("linux-image-6.12.117+deb13-amd64".into()));
        assert_eq!((r.session.topology.nr_cpus(), r.runs, r.warmup, r.seed), (2, 2, 1, 1));
        assert_eq!((r.base.as_str(), r.session.accel), ("default", Accel::Auto));
        assert_eq!(r.session.timeout, Duration::from_secs(900));
        assert_eq!(r.session.trace_kb, None, "untraced unless the table says trace = true");
        let r = request(&p.vm[1], &opts).unwrap();
        assert_eq!(r.session.trace_kb, Some(crate::guest::TRACE_KB), "trace = true is --trace");
        assert_eq!(r.session.kernel, KernelSource::Image("/boot/my-bzImage".into()));
        assert_eq!((r.session.topology.nr_cpus(), r.runs, r.warmup, r.seed, r.session.accel), (4, 1, 0, 7, Accel::Tcg));
        assert_eq!(r.workload, ["pipe", "--classic", "-l", "500"]);
        let all = variants(&r).unwrap();
        assert_eq!(
            all.iter().map(|v| v.spec.as_str()).collect::<Vec<_>>(),
            ["NO_PLACE_LAG", "NO_PLACE_LAG PLACE_LAG", "NO_PLACE_LAG preempt=full"]
        );
        // The stored key: what `compare --vm` stores for the same boot.
        let k = crate::compare::run_key("/boot/my-bzImage", &all[2], "smp:4", &r.workload, 7);
        assert_eq!(k.spec, "vm:/boot/my-bzImage NO_PLACE_LAG preempt=full");
        assert_eq!((k.topology.as_str(), k.seed, k.duration_ns, k.max_events), ("smp:4", 7, 0, 0));
    }

    #[test]
    fn what_a_guest_cannot_be_told_fails_before_any_boot() {
        let bad = TWO_TABLES.replace("\"PLACE_LAG\", ", "\"+next-buddy-eevdf\", ");
        let p = plan(&bad);
        let store_dir = tempfile::tempdir().unwrap();
        let store = Store::create(store_dir.path()).unwrap();
        let opts = SweepOptions { schedlab_bin: "/nonexistent".into(), verbose: false };
        match sweep(&p, &store, None, &opts, &AtomicBool::new(false), &|_| {}) {
            Err(VmError::Usage(m)) => {
                assert!(m.starts_with("[[vm]] `mine`: --variant `+next-buddy-eevdf`"), "{m}")
            }
            other => panic!("{:?}", other.map(|r| r.stored)),
        }
        // 128 CPUs: more than a TCG guest boots.
        let p = plan(&TWO_TABLES.replace("smp:4", "arm64-128"));
        match sweep(&p, &store, None, &opts, &AtomicBool::new(false), &|_| {}) {
            Err(VmError::Usage(m)) => assert!(m.starts_with("[[vm]] `mine`: --topology arm64-128"), "{m}"),
            other => panic!("{:?}", other.map(|r| r.stored)),
        }
        // A workload the guest's `schedlab native` would refuse after a boot.
        let p = plan(&TWO_TABLES.replace("pipe --classic -l 500", "pgbench -c 2"));
        match sweep(&p, &store, None, &opts, &AtomicBool::new(false), &|_| {}) {
            Err(VmError::Usage(m)) => assert!(m.starts_with("[[vm]] `mine`: pgbench: (no -S)"), "{m}"),
            other => panic!("{:?}", other.map(|r| r.stored)),
        }
        assert_eq!(store.count().unwrap(), 0);
    }

    /// A shard's boots, and boots whose run is stored, are not booted: with every selected
    /// run in the store, a sweep makes no session at all (no qemu, no kernel fetched).
    #[test]
    fn stored_and_other_shards_boots_are_not_booted() {
        let p = plan(TWO_TABLES);
        let store_dir = tempfile::tempdir().unwrap();
        let store = Store::create(store_dir.path()).unwrap();
        let opts = SweepOptions { schedlab_bin: "/nonexistent".into(), verbose: false };
        // Store what shard 0/3 of the second table would boot: boots 6 and 9 of the plan are
        // not in it (6 % 3 == 0 is; boot numbers 6, 7, 8 are the table's 3 variants).
        let r = request(&p.vm[1], &opts).unwrap();
        let all = variants(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(
            r#"{"counters":{"nr_switches":100,"nr_voluntary_switches":90,"nr_involuntary_switches":10,"nr_migrations":3,
                "nr_wakeups":80,"nr_wakeups_sync":70,"nr_wakeups_local":40,"nr_wakeups_remote":40,"nr_wakeups_affine":5,
                "nr_wakeups_affine_attempts":9,"nr_wakeups_migrate":2,"nr_wakeup_preemptions":null,"nr_ipis":null},
               "native":{"ops":50,"op":"loop","elapsed_ns":123},"workload":{"argv":["pipe"]},
               "metric":{"name":"usecs_per_op","value":5.0,"better":"lower"}}"#,
        )
        .unwrap();
        let t = crate::compare::record(&crate::console::GuestRun::from_json(&v).unwrap(), "x", "6.12", "smp:4", 7);
        for (i, v) in all.iter().enumerate() {
            let key = crate::compare::run_key("/boot/my-bzImage", v, "smp:4", &r.workload, 7);
            if (Shard { index: 0, count: 3 }).contains(6 + i) {
                store.insert(&key.spec, &key, &t, 1.0).unwrap();
            }
        }
        // The first table's boots in shard 0/3 are 3 (plan runs 2..6: 3), which are not
        // stored: cancel before booting them.
        let cancel = AtomicBool::new(true);
        let rep = sweep(&p, &store, Some(Shard { index: 0, count: 3 }), &opts, &cancel, &|_| {}).unwrap();
        assert_eq!(rep, VmSweepReport { planned: 7, in_shard: 2, already: 1, stored: 0, cancelled: 1 });
    }
}
