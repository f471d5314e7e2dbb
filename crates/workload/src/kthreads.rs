//! A guest's own kernel threads: the periodic kworker, ksoftirqd and RCU activity that every
//! real run shares its CPUs with.
//!
//! A benchmark never runs alone on a real kernel. In the ftraces of
//! `data/ground-truth/qemu-2vcpu/traces/` (Debian 6.12.117 and 7.3.4 under qemu TCG, 2 vCPUs,
//! `hackbench -T -p -g 2 -l 100`), kernel threads are switched in about 100 times a second:
//!
//! | thread | CPU | switch-ins per s (3 traces) | run, median (trace) |
//! |---|---|---|---|
//! | `rcu_preempt` | any | 37-53 | 65-71 µs |
//! | `kworker/N:M` | N | 7-15 per CPU | 86-142 µs |
//! | `ksoftirqd/N` | N | 4-14 per CPU | 43-104 µs |
//!
//! (`kdamond`, `kcompactd`, unbound kworkers: under 2 a second each, left out.) Those traces
//! ran 4-5x slower than the ground truth's untraced runs (a loaded host; their README), so a
//! thread's run here is the trace median divided by 4.5; rates are in guest time and kept.
//!
//! Each wakeup of one of them is a timer or softirq wakeup on a CPU that may be running a
//! benchmark task: that task is preempted (an involuntary switch) or a wakee whose previous CPU
//! is now busy is placed elsewhere (a migration, a local wakeup). The ground truth's small
//! non-zero shares on ping-pong rings (0.1-3 % of switches or wakeups) are of that size.
//! They sleep on timer-wheel timers (`schedule_timeout()`, delayed work), so the engine wakes
//! them at a jiffy, from the tick's `TIMER_SOFTIRQ` after `sched_tick()`, as the traces show
//! (`sched_waking` of `rcu_preempt` or `kdamond.0` in softirq context right after
//! `local_timer_entry`).
//!
//! How often they wake depends on the benchmark beside them ([`Beside`]): `rcu_preempt` runs
//! grace periods for the callbacks the benchmark's system calls queue, kworkers and ksoftirqd
//! run work and softirqs those calls raise, and busy loops raise almost none. Traced beside
//! three busy loops (`hogs.c`, 2 s; one trace on a loaded host, 7.3.4, and one per kernel on an
//! idle one, 6.12.117 and 7.3.4, `data/ground-truth/qemu-2vcpu/traces/fair_3on2-*.txt.gz`):
//!
//! | thread | wakeups per s beside busy loops (3 traces) | run, median (idle-host traces) |
//! |---|---|---|
//! | `rcu_preempt` | 1.5, 1.5, 4 | 63-84 µs |
//! | `kworker/N:M` | 1-2.5 per CPU | 130-280 µs |
//! | `kworker/uN:M` | 0.5-1 | 210-395 µs |
//! | `kcompactd0` | 2 (its 500 ms timeout) | 150-265 µs |
//! | `ksoftirqd/N` | 0-0.5 per CPU | - |
//!
//! (7.3.4's `kdamond.0` wakes 17-21 times a second there, 220 µs each; it is left out of both
//! tables, as it was of the hackbench one, because 6.12.117 has no such thread and adding it
//! to the 7.3 busy-loop case was tried and moved the hogs' switch rate away from every real
//! measurement: docs/fidelity.md, "Kernel threads beside busy loops".) Runs there are the
//! idle-host medians divided by 4.5, the first table's divisor, so that both tables share one
//! scale. The divisor is that table's convention, not a measured speed ratio: a thread's run did
//! not lengthen with the host's load (`rcu_preempt` 65-71 µs in the loaded traces, 63-84 µs in
//! the idle ones), while the benchmarks' times did (4-5x).
//!
//! The threads are [`TaskSpec::kthread`] tasks: no address space and they do not keep a run
//! alive. Their phases are spread by the seed, so seeds differ as boots do.

use sim::program::{Op, TaskSpec};

/// One kind of kernel thread: one instance per CPU (bound) or one for the machine.
struct Kind {
    comm: &'static str,
    per_cpu: bool,
    period_ns: u64,
    run_ns: u64,
}

/// The threads beside hackbench, the first table (rates: the traces' medians; runs: trace
/// median / 4.5).
const BESIDE_SYSCALLS: &[Kind] = &[
    Kind { comm: "rcu_preempt", per_cpu: false, period_ns: 22_000_000, run_ns: 15_000 },
    Kind { comm: "kworker", per_cpu: true, period_ns: 100_000_000, run_ns: 27_000 },
    Kind { comm: "ksoftirqd", per_cpu: true, period_ns: 140_000_000, run_ns: 13_000 },
];

/// The threads beside busy loops, the second table: rates from the two idle-host traces
/// (`rcu_preempt` 3 and `kworker/N` 7 wakeups over 2 CPUs, `kworker/u` 1-2 in 2 s; `kcompactd0`
/// its 500 ms timeout), runs the idle-host medians / 4.5; no ksoftirqd (none in either).
const BESIDE_BUSY_LOOPS: &[Kind] = &[
    Kind { comm: "rcu_preempt", per_cpu: false, period_ns: 667_000_000, run_ns: 16_000 },
    Kind { comm: "kworker", per_cpu: true, period_ns: 570_000_000, run_ns: 47_000 },
    Kind { comm: "kworker/u", per_cpu: false, period_ns: 1_330_000_000, run_ns: 67_000 },
    Kind { comm: "kcompactd0", per_cpu: false, period_ns: 500_000_000, run_ns: 46_000 },
];

/// What runs beside the guest's kernel threads, which decides how often they wake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Beside {
    /// A benchmark of system calls (hackbench, and every non-fairness case; see
    /// docs/fidelity.md for why the pair and ring cases keep this table).
    Syscalls,
    /// CPU-bound loops that make no system call while they run (the fairness cases).
    BusyLoops,
}

/// splitmix64: a phase per thread and seed.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The kernel threads of a guest with `nr_cpus` CPUs beside `beside`, phased by `seed`.
pub fn guest(nr_cpus: u32, seed: u64, beside: Beside) -> Vec<TaskSpec> {
    let kinds = match beside {
        Beside::Syscalls => BESIDE_SYSCALLS,
        Beside::BusyLoops => BESIDE_BUSY_LOOPS,
    };
    let mut out = Vec::new();
    for (k, kind) in kinds.iter().enumerate() {
        let instances: Vec<Option<u32>> = if kind.per_cpu { (0..nr_cpus).map(Some).collect() } else { vec![None] };
        for cpu in instances {
            let salt = (k as u64) << 32 | u64::from(cpu.map_or(u32::MAX, |c| c));
            let phase = mix(seed ^ mix(salt)) % kind.period_ns;
            let ops = vec![
                Op::Timer { slot: 0, period_ns: kind.period_ns, absolute: true },
                Op::Run { ns: kind.run_ns },
                Op::Loop { target: 0, slot: 0, count: u32::MAX },
            ];
            let comm = match cpu {
                Some(c) if kind.comm == "kworker" => format!("kworker/{c}:1"),
                Some(c) => format!("{}/{c}", kind.comm),
                None if kind.comm == "kworker/u" => format!("kworker/u{}:1", 2 * nr_cpus),
                None => kind.comm.to_string(),
            };
            out.push(TaskSpec {
                cpus: cpu.map(|c| vec![c]),
                start_ns: phase,
                // No mm: the engine gives kernel threads none (`sim::task::NO_MM`).
                kthread: true,
                ..TaskSpec::new(comm, ops)
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_unbound_thread_and_two_per_cpu() {
        let t = guest(2, 1, Beside::Syscalls);
        let comms: Vec<&str> = t.iter().map(|s| s.comm.as_str()).collect();
        assert_eq!(comms, ["rcu_preempt", "kworker/0:1", "kworker/1:1", "ksoftirqd/0", "ksoftirqd/1"]);
        assert!(t.iter().all(|s| s.kthread && s.start_ns < 140_000_000));
        assert_eq!(t[1].cpus, Some(vec![0]));
        assert_eq!(t[0].cpus, None);
    }

    /// Wakeups a second of a table's threads on `cpus` CPUs.
    fn rate(beside: Beside, cpus: u32) -> f64 {
        guest(cpus, 1, beside)
            .iter()
            .map(|t| match t.ops[0] {
                Op::Timer { period_ns, .. } => 1e9 / period_ns as f64,
                _ => unreachable!("every thread starts with its timer"),
            })
            .sum()
    }

    #[test]
    fn busy_loops_wake_the_guests_threads_far_less_often_than_hackbench() {
        let busy = guest(2, 1, Beside::BusyLoops);
        let comms: Vec<&str> = busy.iter().map(|s| s.comm.as_str()).collect();
        assert_eq!(comms, ["rcu_preempt", "kworker/0:1", "kworker/1:1", "kworker/u4:1", "kcompactd0"]);
        // The traces: about 80 wakeups a second beside hackbench, 8 beside busy loops.
        let (sys, loops) = (rate(Beside::Syscalls, 2), rate(Beside::BusyLoops, 2));
        assert!((75.0..90.0).contains(&sys), "{sys}");
        assert!((6.0..10.0).contains(&loops), "{loops}");
    }

    #[test]
    fn seeds_move_the_phases() {
        let a: Vec<u64> = guest(2, 1, Beside::Syscalls).iter().map(|s| s.start_ns).collect();
        let b: Vec<u64> = guest(2, 2, Beside::Syscalls).iter().map(|s| s.start_ns).collect();
        assert_ne!(a, b);
        assert_eq!(a, guest(2, 1, Beside::Syscalls).iter().map(|s| s.start_ns).collect::<Vec<_>>());
    }
}
