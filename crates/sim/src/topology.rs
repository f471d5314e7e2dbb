//! Machine topologies: which CPUs are SMT siblings, which share a cluster, a last-level cache
//! (LLC), a package and a NUMA node, how far apart the nodes are, and what kernel work costs on
//! such a machine.
//!
//! From a [`Topology`] this module builds the scheduling domains Linux 7.3 would build
//! (`kernel/sched/topology.c`: `sd_init`, `build_sched_domains`, the group builders and the
//! degenerate-domain rules of `cpu_attach_domain`). Wakeup CPU selection and load balancing read
//! nothing else about the machine: domain spans and flags, the LLC size and identity, and whether
//! SMT is active. The kernel rules are restated here, not copied.
//!
//! **Architecture invariant:** this module is pure. It reads no files (the `machine` crate reads
//! `/sys` and TOML files and hands a `Topology` over), iterates no hash map and depends on
//! nothing outside `std`, so one topology always yields the same domains and the same rendering.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use crate::ipc::IpcCosts;

/// Largest machine accepted. An `smp:4096` domain tree builds in about 0.2 s (release build) and
/// takes a few megabytes, because spans and group lists are interned (see [`Domains`]).
pub const MAX_CPUS: u32 = 4096;

/// The largest cost a single kernel operation may be given. No measured cost comes near a
/// second (the deepest idle exits are below a millisecond), and the bound keeps every sum of
/// costs over a run far from `u64` overflow.
pub const MAX_COST_NS: u64 = 1_000_000_000;

/// The SLIT distance of a node to itself (`LOCAL_DISTANCE` in the kernel).
pub const LOCAL_DISTANCE: u32 = 10;

/// Beyond this node distance a NUMA domain loses fork/exec balancing and wake-affine
/// (`node_reclaim_distance`, default `RECLAIM_DISTANCE` = 30).
pub const NODE_RECLAIM_DISTANCE: u32 = 30;

/// Capacity of the biggest CPU of a machine (`SCHED_CAPACITY_SCALE`).
pub const SCHED_CAPACITY_SCALE: u32 = 1024;

// Sched-domain flags. The bit positions follow the declaration order of
// `include/linux/sched/sd_flags.h` (upstream order checked against torvalds/linux, including the
// SD_SHARE_PKG_RESOURCES -> SD_SHARE_LLC rename and SD_CLUSTER). That header was not part of the
// extracted 7.3 tree; its `kernel/sched/` no longer mentions SD_OVERLAP (overlapping NUMA groups
// are keyed on SD_NUMA), so SD_OVERLAP is left out and SD_NUMA takes the next bit. The low bits
// are the ones that matter outside this module: WF_EXEC/WF_FORK/WF_TTWU equal
// SD_BALANCE_EXEC/FORK/WAKE, which `select_task_rq_fair` relies on.

/// Balance when about to become idle.
pub const SD_BALANCE_NEWIDLE: u32 = 1 << 0;
/// Balance on exec (slow path of `select_task_rq_fair`).
pub const SD_BALANCE_EXEC: u32 = 1 << 1;
/// Balance on fork and clone.
pub const SD_BALANCE_FORK: u32 = 1 << 2;
/// Balance on wakeup; no kernel topology sets it, it exists so the wake flags line up.
pub const SD_BALANCE_WAKE: u32 = 1 << 3;
/// Consider waking a task on the waking CPU (`wake_affine`).
pub const SD_WAKE_AFFINE: u32 = 1 << 4;
/// Domain members have different CPU capacities.
pub const SD_ASYM_CPUCAPACITY: u32 = 1 << 5;
/// Domain members span every capacity value of the machine.
pub const SD_ASYM_CPUCAPACITY_FULL: u32 = 1 << 6;
/// Domain members share CPU capacity (SMT siblings).
pub const SD_SHARE_CPUCAPACITY: u32 = 1 << 7;
/// Domain members share a cluster (an L2 or an L3 tag partition).
pub const SD_CLUSTER: u32 = 1 << 8;
/// Domain members share the last-level cache.
pub const SD_SHARE_LLC: u32 = 1 << 9;
/// Only one CPU at a time balances this domain.
pub const SD_SERIALIZE: u32 = 1 << 10;
/// Place busy tasks earlier in the domain (never set by the topologies built here).
pub const SD_ASYM_PACKING: u32 = 1 << 11;
/// Prefer to place tasks in a sibling domain.
pub const SD_PREFER_SIBLING: u32 = 1 << 12;
/// Cross-node balancing: the domain spans more than one NUMA node.
pub const SD_NUMA: u32 = 1 << 13;

/// Every flag with its kernel name, in bit order, for printing.
pub const SD_FLAG_NAMES: &[(u32, &str)] = &[
    (SD_BALANCE_NEWIDLE, "SD_BALANCE_NEWIDLE"),
    (SD_BALANCE_EXEC, "SD_BALANCE_EXEC"),
    (SD_BALANCE_FORK, "SD_BALANCE_FORK"),
    (SD_BALANCE_WAKE, "SD_BALANCE_WAKE"),
    (SD_WAKE_AFFINE, "SD_WAKE_AFFINE"),
    (SD_ASYM_CPUCAPACITY, "SD_ASYM_CPUCAPACITY"),
    (SD_ASYM_CPUCAPACITY_FULL, "SD_ASYM_CPUCAPACITY_FULL"),
    (SD_SHARE_CPUCAPACITY, "SD_SHARE_CPUCAPACITY"),
    (SD_CLUSTER, "SD_CLUSTER"),
    (SD_SHARE_LLC, "SD_SHARE_LLC"),
    (SD_SERIALIZE, "SD_SERIALIZE"),
    (SD_ASYM_PACKING, "SD_ASYM_PACKING"),
    (SD_PREFER_SIBLING, "SD_PREFER_SIBLING"),
    (SD_NUMA, "SD_NUMA"),
];

/// Flags that only mean something when a domain has at least two groups (the `SDF_NEEDS_GROUPS`
/// metaflag): every flag except SD_WAKE_AFFINE. The degenerate-domain rules ignore them on a
/// domain with a single group.
const SD_DEGENERATE_GROUPS_MASK: u32 = ((SD_NUMA << 1) - 1) & !SD_WAKE_AFFINE;

/// Flags every domain starts with in `sd_init`; SD_BALANCE_WAKE is never among them.
const SD_INIT_FLAGS: u32 = SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE | SD_PREFER_SIBLING;

/// Spells out a flag word as `A|B|C` without the `SD_` prefixes, in bit order.
pub fn sd_flags_to_string(flags: u32) -> String {
    let mut out = String::new();
    for &(bit, name) in SD_FLAG_NAMES {
        if flags & bit != 0 {
            if !out.is_empty() {
                out.push('|');
            }
            out.push_str(name.trim_start_matches("SD_"));
        }
    }
    out
}

/// One logical CPU and the hardware it belongs to. All ids are dense indices (0..k) over the
/// machine, not the kernel's sparse `core_id`/`physical_package_id` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTopo {
    /// The CPU number, equal to its position in [`Topology::cpus`].
    pub cpu: u32,
    /// The physical core: CPUs with the same value are SMT siblings.
    pub smt_id: u32,
    /// The cluster (CPUs sharing an L2 or an L3 tag partition). A cluster equal to the core or to
    /// the whole LLC adds no scheduling level.
    pub cluster_id: u32,
    /// The last-level cache as the kernel sees it (`cpu_coregroup_mask`).
    pub llc_id: u32,
    /// The physical package (socket).
    pub package_id: u32,
    /// The NUMA node.
    pub node_id: u32,
    /// `arch_scale_cpu_capacity`: 1024 on symmetric machines, less on little cores.
    pub capacity: u32,
}

/// Simulated costs of kernel work on one machine, in nanoseconds. Each preset documents where
/// its values come from; `/work/shared/spec/workloads.md` §10 holds the anchors. There is no
/// `Default`: a preset, a topology file or the user decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Costs {
    /// System call entry plus exit.
    pub syscall_ns: u64,
    /// Context switch into a task whose mm the CPU has loaded (another thread of the process
    /// that ran last, or a kernel thread, which borrows it).
    pub context_switch_ns: u64,
    /// Context switch that loads another mm (the next task's mm is not the CPU's loaded one).
    pub context_switch_mm_ns: u64,
    /// `try_to_wake_up` on the waker's side when it enqueues directly (same LLC).
    pub wakeup_local_ns: u64,
    /// Waker's side of a remote wakeup through the wake list plus a reschedule IPI.
    pub wakeup_remote_ipi_ns: u64,
    /// Waker's extra for `select_task_rq_fair()`, which `select_task_rq()` (core.c v7.3.4)
    /// runs only for a task allowed on more than one CPU (a pinned wakee skips it).
    pub wakeup_select_ns: u64,
    /// Waker's extra when it enqueues directly on another CPU's runqueue (`ttwu_queue()` with
    /// `ttwu_queue_cond()` false, or `ttwu_runnable()` of a task queued elsewhere: the waker
    /// takes and updates the target's runqueue lock and lines).
    pub wakeup_remote_enqueue_ns: u64,
    /// Target's side of that IPI: interrupt entry and the queued enqueue.
    pub ipi_receive_ns: u64,
    /// A local timer interrupt on a busy CPU (the tick, an hrtick or hrtimer expiry): entry,
    /// handler and exit. Without `CONFIG_IRQ_TIME_ACCOUNTING` (Debian's configs) the kernel
    /// charges it to the interrupted task, whose work it delays.
    pub timer_irq_ns: u64,
    /// Waker's side when the target CPU polls in idle, so no IPI is needed.
    pub wakeup_polling_idle_ns: u64,
    /// Exit latency of the shallow idle state (C1 / WFI).
    pub idle_exit_ns_c1: u64,
    /// Exit latency of the deepest idle state.
    pub idle_exit_ns_deep: u64,
    /// The idle governor picks the deep state when it expects an idle period at least this long
    /// (the state's target residency).
    pub idle_deep_residency_ns: u64,
    /// Cache-cold penalty of a 64 KiB working set moved to an SMT sibling.
    pub migration_smt_ns: u64,
    /// Same, moved to another core of the same LLC.
    pub migration_llc_ns: u64,
    /// Same, moved to another LLC of the same node.
    pub migration_cross_llc_ns: u64,
    /// Same, moved to another NUMA node.
    pub migration_cross_node_ns: u64,
    /// Copying one KiB between user and kernel (pipe and socket payloads).
    pub copy_ns_per_kib: u64,
    /// The idle governor polls instead of halting when it expects to be idle for less than
    /// this (`CPUIDLE_POLL_MIN`, 10 µs, on bare metal; a haltpoll guest polls up to
    /// `guest_halt_poll_ns`; 0 = never polls). A polling CPU needs no IPI and wakes at once.
    pub idle_poll_ns: u64,
    /// Per-operation base costs of the IPC system calls, on top of `syscall_ns`, the copy and
    /// the wakeups (keys `pipe_write_ns` … `wait_ns`).
    pub ipc: IpcCosts,
    /// Run-to-run noise: every kernel cost above is drawn, per operation, uniformly within
    /// ± this many percent of its value from the seeded cost stream. It is what makes runs
    /// with different seeds differ, as boots and runs of a real machine do.
    pub jitter_pct: u64,
}

impl Costs {
    /// Every cost parameter by name, with what it charges; `--cost` and `[costs]` use these keys.
    pub const KEYS: &'static [(&'static str, &'static str)] = &[
        ("syscall_ns", "system call entry + exit"),
        ("context_switch_ns", "context switch into a task whose mm the CPU has loaded (same process, kernel thread)"),
        ("context_switch_mm_ns", "context switch that loads another mm (x86 switch_mm_irqs_off, CR3)"),
        ("wakeup_local_ns", "ttwu on the waker's side, direct enqueue (same LLC)"),
        ("wakeup_remote_ipi_ns", "ttwu on the waker's side through the wake list + IPI"),
        ("wakeup_select_ns", "extra on the waker's side for select_task_rq_fair (wakee allowed on more than one CPU)"),
        ("wakeup_remote_enqueue_ns", "extra on the waker's side for a direct enqueue on another CPU's runqueue"),
        ("ipi_receive_ns", "IPI receipt and queued enqueue on the target CPU"),
        ("timer_irq_ns", "a local timer interrupt (tick, hrtick) on a busy CPU, charged to the interrupted task"),
        ("wakeup_polling_idle_ns", "ttwu on the waker's side when the target polls in idle"),
        ("idle_exit_ns_c1", "exit latency of the shallow idle state (C1 / WFI)"),
        ("idle_exit_ns_deep", "exit latency of the deepest idle state"),
        ("idle_deep_residency_ns", "expected idle time from which the deep state is chosen"),
        ("migration_smt_ns", "cache-cold penalty, 64 KiB working set, to an SMT sibling"),
        ("migration_llc_ns", "cache-cold penalty, 64 KiB working set, within the LLC"),
        ("migration_cross_llc_ns", "cache-cold penalty, 64 KiB working set, to another LLC"),
        ("migration_cross_node_ns", "cache-cold penalty, 64 KiB working set, to another node"),
        ("copy_ns_per_kib", "user/kernel copy per KiB of pipe or socket payload"),
        ("idle_poll_ns", "the idle governor polls (no IPI, no exit latency) below this expected idle time"),
        ("pipe_write_ns", "anon_pipe_write of <= 100 B beyond entry and copy"),
        ("pipe_read_ns", "anon_pipe_read beyond entry and copy"),
        ("unix_send_ns", "unix_stream_sendmsg of one skb beyond entry and copy"),
        ("unix_recv_ns", "unix_stream_recvmsg beyond entry and copy"),
        ("tcp_send_ns", "tcp_sendmsg incl. the inline loopback NET_RX softirq"),
        ("tcp_recv_ns", "tcp_recvmsg beyond entry and copy"),
        ("eventfd_ns", "eventfd read or write"),
        ("futex_wait_ns", "FUTEX_WAIT up to blocking"),
        ("futex_wake_ns", "FUTEX_WAKE without the wakeups"),
        ("poll_ns", "one pass of do_poll / ep_poll"),
        ("spawn_ns", "fork / clone up to wake_up_new_task"),
        ("wait_ns", "one wait() pass"),
        ("jitter_pct", "per-operation random variation of every cost above, in percent (seeded)"),
    ];

    /// The x86 server defaults of workloads.md §10.2 (all **\[estimate\]**, fitted to the §10.1
    /// anchors): syscall 0.10 µs; context switch 0.8 µs (same mm) and 1.3 µs (different mm);
    /// ttwu direct 0.4 µs, via wake list + IPI 0.7 µs, IPI receipt 1.0 µs; idle exit C1 1 µs and
    /// Sapphire Rapids C6 290 µs with 800 µs target residency (`intel_idle` `spr_cstates`).
    /// A polling idle CPU needs no IPI, so its wakeup costs the direct-enqueue 0.4 µs (§10.2
    /// "idle exit: poll 0"). The migration penalties apply §10.3 to 64 KiB = 1024 lines with an
    /// MLP of 8: SMT siblings share L1/L2 (0), own LLC 20 ns/line (2.56 µs), another LLC
    /// 100 ns/line (12.8 µs), another node 150 ns/line (19.2 µs). Copying costs 100 ns per KiB
    /// (about 10 GB/s for cache-hot `copy_to_user`) **\[estimate\]**.
    pub fn x86_server() -> Costs {
        Costs {
            syscall_ns: 100,
            context_switch_ns: 800,
            context_switch_mm_ns: 1_300,
            wakeup_local_ns: 400,
            wakeup_remote_ipi_ns: 700,
            wakeup_select_ns: 0,
            wakeup_remote_enqueue_ns: 0,
            ipi_receive_ns: 1_000,
            timer_irq_ns: 1_000,
            wakeup_polling_idle_ns: 400,
            idle_exit_ns_c1: 1_000,
            idle_exit_ns_deep: 290_000,
            idle_deep_residency_ns: 800_000,
            migration_smt_ns: 0,
            migration_llc_ns: 2_560,
            migration_cross_llc_ns: 12_800,
            migration_cross_node_ns: 19_200,
            copy_ns_per_kib: 100,
            idle_poll_ns: 10_000,
            ipc: IpcCosts::x86_server(),
            jitter_pct: 10,
        }
    }

    /// Every parameter with its value, in [`Costs::KEYS`] order. The exhaustive destructuring
    /// makes a new field a compile error here until it is named.
    pub fn values(&self) -> Vec<(&'static str, u64)> {
        let Costs {
            syscall_ns,
            context_switch_ns,
            context_switch_mm_ns,
            wakeup_local_ns,
            wakeup_remote_ipi_ns,
            wakeup_select_ns,
            wakeup_remote_enqueue_ns,
            ipi_receive_ns,
            timer_irq_ns,
            wakeup_polling_idle_ns,
            idle_exit_ns_c1,
            idle_exit_ns_deep,
            idle_deep_residency_ns,
            migration_smt_ns,
            migration_llc_ns,
            migration_cross_llc_ns,
            migration_cross_node_ns,
            copy_ns_per_kib,
            idle_poll_ns,
            ipc,
            jitter_pct,
        } = *self;
        let IpcCosts {
            pipe_write_ns,
            pipe_read_ns,
            unix_send_ns,
            unix_recv_ns,
            tcp_send_ns,
            tcp_recv_ns,
            eventfd_ns,
            futex_wait_ns,
            futex_wake_ns,
            poll_ns,
            spawn_ns,
            wait_ns,
        } = ipc;
        vec![
            ("syscall_ns", syscall_ns),
            ("context_switch_ns", context_switch_ns),
            ("context_switch_mm_ns", context_switch_mm_ns),
            ("wakeup_local_ns", wakeup_local_ns),
            ("wakeup_remote_ipi_ns", wakeup_remote_ipi_ns),
            ("wakeup_select_ns", wakeup_select_ns),
            ("wakeup_remote_enqueue_ns", wakeup_remote_enqueue_ns),
            ("ipi_receive_ns", ipi_receive_ns),
            ("timer_irq_ns", timer_irq_ns),
            ("wakeup_polling_idle_ns", wakeup_polling_idle_ns),
            ("idle_exit_ns_c1", idle_exit_ns_c1),
            ("idle_exit_ns_deep", idle_exit_ns_deep),
            ("idle_deep_residency_ns", idle_deep_residency_ns),
            ("migration_smt_ns", migration_smt_ns),
            ("migration_llc_ns", migration_llc_ns),
            ("migration_cross_llc_ns", migration_cross_llc_ns),
            ("migration_cross_node_ns", migration_cross_node_ns),
            ("copy_ns_per_kib", copy_ns_per_kib),
            ("idle_poll_ns", idle_poll_ns),
            ("pipe_write_ns", pipe_write_ns),
            ("pipe_read_ns", pipe_read_ns),
            ("unix_send_ns", unix_send_ns),
            ("unix_recv_ns", unix_recv_ns),
            ("tcp_send_ns", tcp_send_ns),
            ("tcp_recv_ns", tcp_recv_ns),
            ("eventfd_ns", eventfd_ns),
            ("futex_wait_ns", futex_wait_ns),
            ("futex_wake_ns", futex_wake_ns),
            ("poll_ns", poll_ns),
            ("spawn_ns", spawn_ns),
            ("wait_ns", wait_ns),
            ("jitter_pct", jitter_pct),
        ]
    }

    /// The value of one parameter, or `None` for a name that is not in [`Costs::KEYS`].
    pub fn get(&self, key: &str) -> Option<u64> {
        self.values().iter().find(|(name, _)| *name == key).map(|&(_, value)| value)
    }

    /// Checks a value for a parameter without setting it: the key must exist, a cost must be
    /// at most [`MAX_COST_NS`] and `jitter_pct` at most 100.
    pub fn check_value(key: &str, value: u64) -> Result<(), String> {
        if Costs::KEYS.iter().all(|(known, _)| *known != key) {
            return Err(Costs::unknown_key_message(key));
        }
        if key == "jitter_pct" {
            if value > 100 {
                return Err(format!("jitter_pct: {value} is more than 100 %"));
            }
        } else if value > MAX_COST_NS {
            return Err(format!("{key}: {value} ns is outside 0..={MAX_COST_NS} (one second per operation)"));
        }
        Ok(())
    }

    /// Overrides one parameter. An unknown key is an error that lists the known ones, so a typo
    /// on the command line or in a file never passes silently; so is a value outside
    /// [`Costs::check_value`]'s range.
    pub fn set(&mut self, key: &str, value_ns: u64) -> Result<(), String> {
        Costs::check_value(key, value_ns)?;
        let slot = match key {
            "syscall_ns" => &mut self.syscall_ns,
            "context_switch_ns" => &mut self.context_switch_ns,
            "context_switch_mm_ns" => &mut self.context_switch_mm_ns,
            "wakeup_local_ns" => &mut self.wakeup_local_ns,
            "wakeup_remote_ipi_ns" => &mut self.wakeup_remote_ipi_ns,
            "wakeup_select_ns" => &mut self.wakeup_select_ns,
            "wakeup_remote_enqueue_ns" => &mut self.wakeup_remote_enqueue_ns,
            "ipi_receive_ns" => &mut self.ipi_receive_ns,
            "timer_irq_ns" => &mut self.timer_irq_ns,
            "wakeup_polling_idle_ns" => &mut self.wakeup_polling_idle_ns,
            "idle_exit_ns_c1" => &mut self.idle_exit_ns_c1,
            "idle_exit_ns_deep" => &mut self.idle_exit_ns_deep,
            "idle_deep_residency_ns" => &mut self.idle_deep_residency_ns,
            "migration_smt_ns" => &mut self.migration_smt_ns,
            "migration_llc_ns" => &mut self.migration_llc_ns,
            "migration_cross_llc_ns" => &mut self.migration_cross_llc_ns,
            "migration_cross_node_ns" => &mut self.migration_cross_node_ns,
            "copy_ns_per_kib" => &mut self.copy_ns_per_kib,
            "idle_poll_ns" => &mut self.idle_poll_ns,
            "pipe_write_ns" => &mut self.ipc.pipe_write_ns,
            "pipe_read_ns" => &mut self.ipc.pipe_read_ns,
            "unix_send_ns" => &mut self.ipc.unix_send_ns,
            "unix_recv_ns" => &mut self.ipc.unix_recv_ns,
            "tcp_send_ns" => &mut self.ipc.tcp_send_ns,
            "tcp_recv_ns" => &mut self.ipc.tcp_recv_ns,
            "eventfd_ns" => &mut self.ipc.eventfd_ns,
            "futex_wait_ns" => &mut self.ipc.futex_wait_ns,
            "futex_wake_ns" => &mut self.ipc.futex_wake_ns,
            "poll_ns" => &mut self.ipc.poll_ns,
            "spawn_ns" => &mut self.ipc.spawn_ns,
            "wait_ns" => &mut self.ipc.wait_ns,
            "jitter_pct" => &mut self.jitter_pct,
            _ => return Err(Costs::unknown_key_message(key)),
        };
        *slot = value_ns;
        Ok(())
    }

    /// The error text for a cost key that does not exist, listing every known key.
    pub fn unknown_key_message(key: &str) -> String {
        let known: Vec<&str> = Costs::KEYS.iter().map(|(name, _)| *name).collect();
        format!("unknown cost key `{key}`; known keys: {}", known.join(", "))
    }
}

/// A semantic error in a topology: which CPU (if any), which field, and what is wrong. Callers
/// that know where a field came from (a TOML line, a sysfs file) use `cpu` and `field` to point
/// there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyError {
    /// The CPU whose entry is wrong, when the error is about one CPU.
    pub cpu: Option<u32>,
    /// The field (or builder parameter) at fault, by its Rust name.
    pub field: &'static str,
    /// What is wrong, as a sentence fragment that names the offending values.
    pub message: String,
}

impl TopologyError {
    fn at_field(field: &'static str, message: String) -> TopologyError {
        TopologyError { cpu: None, field, message }
    }
    fn at_cpu(cpu: u32, field: &'static str, message: String) -> TopologyError {
        TopologyError { cpu: Some(cpu), field, message }
    }
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cpu {
            Some(cpu) => write!(f, "cpu {cpu}: field `{}`: {}", self.field, self.message),
            None => write!(f, "field `{}`: {}", self.field, self.message),
        }
    }
}

impl std::error::Error for TopologyError {}

/// The shape of a regular machine for [`Topology::uniform`]: every package has the same number
/// of nodes, every node the same number of LLCs, and so on. A struct rather than six positional
/// integers, because swapping two counts would still type-check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UniformShape {
    pub packages: u32,
    pub nodes_per_package: u32,
    pub llcs_per_node: u32,
    pub cores_per_llc: u32,
    pub threads_per_core: u32,
    /// SLIT distance between any two different nodes (ignored on one-node machines).
    pub remote_distance: u32,
}

/// A machine: its CPUs, NUMA distances and kernel costs, plus the provenance of the figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    pub name: String,
    pub description: String,
    /// Where the figures come from (spec sheets, `lscpu`, LKML reports); `[estimate]` marks
    /// assumptions.
    pub source: String,
    /// One entry per CPU, in CPU order.
    pub cpus: Vec<CpuTopo>,
    /// The SLIT: `node_distance[a][b]`, 10 on the diagonal, symmetric.
    pub node_distance: Vec<Vec<u32>>,
    pub costs: Costs,
}

/// The preset names in the order [`Topology::presets`] returns them.
pub const PRESET_NAMES: &[&str] =
    &["vm-2cpu", "desktop-8c16t", "xeon-8369hb-4s", "ampere-altra-80", "spr-2s-192", "arm64-128", "rpi5"];

impl Topology {
    /// `n` identical CPUs without SMT, each its own core, sharing one LLC, package and node: the
    /// abstract machine of most scheduler unit tests.
    ///
    /// # Panics
    ///
    /// If `n` is outside 1..=[`MAX_CPUS`]; [`Topology::by_name`] checks user input first.
    pub fn smp(n: u32) -> Topology {
        assert!((1..=MAX_CPUS).contains(&n), "smp:{n} needs 1..={MAX_CPUS} CPUs");
        let mut topology = uniform_preset(&format!("smp:{n}"), shape(1, 1, 1, n, 1, 0));
        topology.description = format!("{n} identical CPUs without SMT sharing one LLC");
        topology.source = "synthetic".to_string();
        topology
    }

    /// A regular machine. CPUs are numbered the way x86 firmware usually enumerates them: the
    /// first thread of every core across all packages, then the second threads, so core `c` of
    /// a two-way SMT machine with `k` cores holds CPUs `c` and `c + k`. Each core is its own
    /// cluster (per-core L2), so no cluster level appears. Costs are [`Costs::x86_server`].
    pub fn uniform(name: &str, shape: UniformShape) -> Result<Topology, TopologyError> {
        let counts = [
            ("packages", shape.packages),
            ("nodes_per_package", shape.nodes_per_package),
            ("llcs_per_node", shape.llcs_per_node),
            ("cores_per_llc", shape.cores_per_llc),
            ("threads_per_core", shape.threads_per_core),
        ];
        let mut total: u64 = 1;
        for (field, count) in counts {
            if count == 0 {
                return Err(TopologyError::at_field(field, "must be at least 1".to_string()));
            }
            total *= u64::from(count);
            if total > u64::from(MAX_CPUS) {
                return Err(TopologyError::at_field(field, format!("makes the machine larger than {MAX_CPUS} CPUs")));
            }
        }
        let nodes = shape.packages * shape.nodes_per_package;
        let cores_per_node = shape.cores_per_llc * shape.llcs_per_node;
        let cores = nodes * cores_per_node;
        let mut cpus = Vec::with_capacity(total as usize);
        for thread in 0..shape.threads_per_core {
            for core in 0..cores {
                let node_id = core / cores_per_node;
                cpus.push(CpuTopo {
                    cpu: thread * cores + core,
                    smt_id: core,
                    cluster_id: core,
                    llc_id: core / shape.cores_per_llc,
                    package_id: node_id / shape.nodes_per_package,
                    node_id,
                    capacity: SCHED_CAPACITY_SCALE,
                });
            }
        }
        let node_distance = (0..nodes)
            .map(|a| (0..nodes).map(|b| if a == b { LOCAL_DISTANCE } else { shape.remote_distance }).collect())
            .collect();
        let topology = Topology {
            name: name.to_string(),
            description: format!(
                "{} package(s) x {} node(s) x {} LLC(s) x {} core(s) x {} thread(s)",
                shape.packages,
                shape.nodes_per_package,
                shape.llcs_per_node,
                shape.cores_per_llc,
                shape.threads_per_core
            ),
            source: "uniform shape".to_string(),
            cpus,
            node_distance,
            costs: Costs::x86_server(),
        };
        match topology.check() {
            Err(error) if error.field == "node_distance" => Err(TopologyError::at_field(
                "remote_distance",
                format!("{} (from remote_distance = {})", error.message, shape.remote_distance),
            )),
            Err(error) => Err(error),
            Ok(()) => Ok(topology),
        }
    }

    /// A preset machine by name; see [`PRESET_NAMES`].
    pub fn preset(name: &str) -> Option<Topology> {
        let topology = match name {
            "vm-2cpu" => preset_vm_2cpu(),
            "desktop-8c16t" => preset_desktop_8c16t(),
            "xeon-8369hb-4s" => preset_xeon_8369hb_4s(),
            "ampere-altra-80" => preset_ampere_altra_80(),
            "spr-2s-192" => preset_spr_2s_192(),
            "arm64-128" => preset_arm64_128(),
            "rpi5" => preset_rpi5(),
            _ => return None,
        };
        debug_assert!(topology.check().is_ok(), "preset {name} must validate");
        Some(topology)
    }

    /// Every preset, in the fixed order of [`PRESET_NAMES`].
    pub fn presets() -> Vec<Topology> {
        PRESET_NAMES.iter().filter_map(|name| Topology::preset(name)).collect()
    }

    /// A preset name or `smp:N` (N in 1..=4096). Files and the host are read by the `machine`
    /// crate, because this module does no I/O.
    pub fn by_name(spec: &str) -> Result<Topology, String> {
        if let Some(topology) = Topology::preset(spec) {
            return Ok(topology);
        }
        if let Some(count) = spec.strip_prefix("smp:") {
            let n: u32 = count
                .parse()
                .map_err(|_| format!("`{spec}`: smp:N needs a CPU count N in 1..={MAX_CPUS}, got `{count}`"))?;
            if n == 0 || n > MAX_CPUS {
                return Err(format!("`{spec}`: smp:N needs N in 1..={MAX_CPUS}, got {n}"));
            }
            return Ok(Topology::smp(n));
        }
        Err(format!("unknown topology `{spec}`; known: {}, smp:N (N in 1..={MAX_CPUS})", PRESET_NAMES.join(", ")))
    }

    /// The number of CPUs, as a length of [`Topology::cpus`].
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }
    pub fn nr_cores(&self) -> u32 {
        self.count_ids(|c| c.smt_id)
    }
    pub fn nr_clusters(&self) -> u32 {
        self.count_ids(|c| c.cluster_id)
    }
    pub fn nr_llcs(&self) -> u32 {
        self.count_ids(|c| c.llc_id)
    }
    pub fn nr_packages(&self) -> u32 {
        self.count_ids(|c| c.package_id)
    }
    pub fn nr_nodes(&self) -> u32 {
        self.count_ids(|c| c.node_id)
    }

    fn count_ids(&self, id: impl Fn(&CpuTopo) -> u32) -> u32 {
        self.cpus.iter().map(|c| id(c) + 1).max().unwrap_or(0)
    }

    /// The CPUs whose field `id` equals that of `cpu`, ascending.
    fn cpus_like(&self, cpu: u32, id: impl Fn(&CpuTopo) -> u32) -> Vec<u32> {
        let key = id(&self.cpus[cpu as usize]);
        self.cpus.iter().filter(|c| id(c) == key).map(|c| c.cpu).collect()
    }

    /// `cpus_share_cache`: both CPUs sit behind the same LLC.
    pub fn cpus_share_cache(&self, a: u32, b: u32) -> bool {
        self.cpus[a as usize].llc_id == self.cpus[b as usize].llc_id
    }

    /// `cpu_smt_mask`: the CPUs of `cpu`'s core, `cpu` included, ascending.
    pub fn smt_siblings(&self, cpu: u32) -> Vec<u32> {
        self.cpus_like(cpu, |c| c.smt_id)
    }

    /// The CPUs sharing `cpu`'s LLC, `cpu` included, ascending.
    pub fn llc_cpus(&self, cpu: u32) -> Vec<u32> {
        self.cpus_like(cpu, |c| c.llc_id)
    }

    /// The CPUs of NUMA node `node`, ascending.
    pub fn node_cpus(&self, node: u32) -> Vec<u32> {
        self.cpus.iter().filter(|c| c.node_id == node).map(|c| c.cpu).collect()
    }

    /// The SLIT distance between the nodes of two CPUs.
    pub fn cpu_distance(&self, a: u32, b: u32) -> u32 {
        let (na, nb) = (self.cpus[a as usize].node_id, self.cpus[b as usize].node_id);
        self.node_distance[na as usize][nb as usize]
    }

    /// `sched_smt_active`: some core has at least two CPUs.
    pub fn sched_smt_active(&self) -> bool {
        (self.nr_cores() as usize) < self.nr_cpus()
    }

    /// `sched_asym_cpucapacity`: the CPUs do not all have the same capacity.
    pub fn asym_capacity(&self) -> bool {
        self.cpus.windows(2).any(|pair| pair[0].capacity != pair[1].capacity)
    }

    /// Checks the topology and returns the first problem as text naming the field.
    pub fn validate(&self) -> Result<(), String> {
        self.check().map_err(|error| error.to_string())
    }

    /// Checks the topology: CPUs listed once in order 0..n, dense ids, capacities in 1..=1024,
    /// proper nesting (SMT siblings share cluster, LLC, package, node and capacity; a cluster
    /// lies in one LLC; an LLC in one node; a node in one package) and a square, symmetric SLIT
    /// with 10 on the diagonal and 11..=254 elsewhere. The domain builder relies on all of it.
    pub fn check(&self) -> Result<(), TopologyError> {
        if self.name.trim().is_empty() {
            return Err(TopologyError::at_field("name", "must not be empty".to_string()));
        }
        self.check_cpu_list()?;
        self.check_dense_ids()?;
        for c in &self.cpus {
            if c.capacity == 0 || c.capacity > SCHED_CAPACITY_SCALE {
                return Err(TopologyError::at_cpu(
                    c.cpu,
                    "capacity",
                    format!("{} is outside 1..={SCHED_CAPACITY_SCALE}", c.capacity),
                ));
            }
        }
        self.check_nesting()?;
        self.check_distances()
    }

    fn check_cpu_list(&self) -> Result<(), TopologyError> {
        if self.cpus.is_empty() {
            return Err(TopologyError::at_field("cpus", "a machine needs at least one CPU".into()));
        }
        if self.cpus.len() > MAX_CPUS as usize {
            return Err(TopologyError::at_field(
                "cpus",
                format!("{} CPUs is more than the {MAX_CPUS} supported", self.cpus.len()),
            ));
        }
        for (position, c) in self.cpus.iter().enumerate() {
            let position = position as u32;
            if c.cpu < position {
                // Positions 0..position hold CPUs 0..position exactly, so this one repeats.
                return Err(TopologyError::at_cpu(
                    c.cpu,
                    "cpu",
                    format!("CPU {} is listed twice (positions {} and {position})", c.cpu, c.cpu),
                ));
            }
            if c.cpu > position {
                return Err(TopologyError::at_cpu(
                    c.cpu,
                    "cpu",
                    format!("CPUs must be listed in order 0..n: position {position} holds CPU {}", c.cpu),
                ));
            }
        }
        Ok(())
    }

    fn check_dense_ids(&self) -> Result<(), TopologyError> {
        type Id = fn(&CpuTopo) -> u32;
        let fields: [(&'static str, Id); 5] =
            [("smt_id", core), ("cluster_id", cluster), ("llc_id", llc), ("package_id", package), ("node_id", node)];
        let n = self.cpus.len();
        for (field, id) in fields {
            let mut used = vec![false; n];
            for c in &self.cpus {
                let value = id(c);
                if value as usize >= n {
                    return Err(TopologyError::at_cpu(
                        c.cpu,
                        field,
                        format!("{value} is not below the CPU count {n}; ids must be dense 0..k"),
                    ));
                }
                used[value as usize] = true;
            }
            let max = self.cpus.iter().map(id).max().unwrap_or(0) as usize;
            if let Some(gap) = used[..max].iter().position(|&u| !u) {
                return Err(TopologyError::at_field(
                    field,
                    format!("ids must be dense 0..k: {max} is used but {gap} is not"),
                ));
            }
        }
        Ok(())
    }

    /// Each rule says: CPUs with equal `group` must have equal `field`. The first CPU of each
    /// group is the reference, so the error names the later CPU and that first sibling.
    fn check_nesting(&self) -> Result<(), TopologyError> {
        type Id = fn(&CpuTopo) -> u32;
        let rules: [(Id, &'static str, Id, &str); 10] = [
            (core, "cluster_id", cluster, "SMT siblings share their cluster"),
            (core, "llc_id", llc, "SMT siblings share their LLC"),
            (core, "package_id", package, "SMT siblings share their package"),
            (core, "node_id", node, "SMT siblings share their node"),
            (core, "capacity", capacity, "SMT siblings have one capacity (kernel rule)"),
            (cluster, "llc_id", llc, "a cluster lies within one LLC"),
            (cluster, "node_id", node, "a cluster lies within one node"),
            (llc, "node_id", node, "an LLC lies within one node (Linux splits it)"),
            (llc, "package_id", package, "an LLC lies within one package"),
            (node, "package_id", package, "a NUMA node lies within one package"),
        ];
        let mut first: Vec<Option<u32>> = vec![None; self.cpus.len()];
        for (group, field, value, why) in rules {
            first.iter_mut().for_each(|slot| *slot = None);
            for c in &self.cpus {
                let slot = &mut first[group(c) as usize];
                let Some(reference) = *slot else {
                    *slot = Some(c.cpu);
                    continue;
                };
                let expected = value(&self.cpus[reference as usize]);
                if value(c) != expected {
                    let message = format!("{} differs from {expected} of CPU {reference}: {why}", value(c));
                    return Err(TopologyError::at_cpu(c.cpu, field, message));
                }
            }
        }
        Ok(())
    }

    fn check_distances(&self) -> Result<(), TopologyError> {
        let nodes = self.nr_nodes() as usize;
        let matrix = &self.node_distance;
        let field = "node_distance";
        if matrix.len() != nodes {
            return Err(TopologyError::at_field(
                field,
                format!("has {} rows but the machine has {nodes} node(s)", matrix.len()),
            ));
        }
        for (a, row) in matrix.iter().enumerate() {
            if row.len() != nodes {
                return Err(TopologyError::at_field(
                    field,
                    format!("row {a} has {} entries but the machine has {nodes} node(s)", row.len()),
                ));
            }
        }
        for (a, row) in matrix.iter().enumerate() {
            for (b, &distance) in row.iter().enumerate() {
                if a == b && distance != LOCAL_DISTANCE {
                    return Err(TopologyError::at_field(
                        field,
                        format!("[{a}][{a}] is {distance} but a node's distance to itself is {LOCAL_DISTANCE}"),
                    ));
                }
                if a != b && !(LOCAL_DISTANCE + 1..=254).contains(&distance) {
                    return Err(TopologyError::at_field(
                        field,
                        format!("[{a}][{b}] is {distance} but remote distances lie in 11..=254"),
                    ));
                }
                if matrix[b][a] != distance {
                    return Err(TopologyError::at_field(
                        field,
                        format!("is not symmetric: [{a}][{b}] is {distance} but [{b}][{a}] is {}", matrix[b][a]),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Builds the scheduling domains of every CPU as Linux 7.3 does. The topology must pass
    /// [`Topology::check`].
    pub fn build_domains(&self) -> Domains {
        debug_assert!(self.check().is_ok(), "build_domains needs a valid topology");
        DomainBuilder::new(self).build()
    }

    /// A readable picture for `schedlab topology show`: summary, hardware tree, the domains of
    /// CPU 0, the SLIT, the default base slice and the cost table. Deterministic.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_summary(&mut out);
        self.render_layout(&mut out);
        self.render_domains_of(0, &self.build_domains(), &mut out);
        self.render_distances(&mut out);
        let slice_ns = default_base_slice_ns(self.nr_cpus() as u32);
        let factor = slice_ns / NORMALIZED_BASE_SLICE_NS;
        let _ = writeln!(
            out,
            "\nbase slice: {} ms = 0.70 ms x {factor} (1 + ilog2(min({}, 8)), log tunable scaling)",
            format_ms(slice_ns),
            self.nr_cpus()
        );
        self.render_costs(&mut out);
        out
    }

    fn render_summary(&self, out: &mut String) {
        let threads = self.nr_cpus() / self.nr_cores().max(1) as usize;
        let smt = if self.sched_smt_active() { format!("yes ({threads} threads/core)") } else { "no".into() };
        let _ = writeln!(
            out,
            "{}: {} CPUs, {} package(s), {} node(s), {} LLC(s), {} core(s), SMT {smt}",
            self.name,
            self.nr_cpus(),
            self.nr_packages(),
            self.nr_nodes(),
            self.nr_llcs(),
            self.nr_cores()
        );
        if self.asym_capacity() {
            let _ = writeln!(out, "  asymmetric CPU capacities");
        }
        let _ = writeln!(out, "  {}", self.description);
        let _ = writeln!(out, "  source: {}", self.source);
    }

    fn render_layout(&self, out: &mut String) {
        let _ = writeln!(out, "\nlayout (package > node > LLC > cluster or core: CPUs):");
        let with_clusters = self.nr_clusters() != self.nr_cores() && self.nr_clusters() != self.nr_llcs();
        for package in 0..self.nr_packages() {
            let cpus = self.select(|c| c.package_id == package);
            let _ = writeln!(out, "  package {package}: CPUs {}", format_cpu_list(&cpus));
            for node in self.child_ids(|c| c.package_id == package, |c| c.node_id) {
                let cpus = self.select(|c| c.node_id == node);
                let _ = writeln!(out, "    node {node}: CPUs {}", format_cpu_list(&cpus));
                let llcs = self.child_ids(|c| c.node_id == node, |c| c.llc_id);
                for (shown, &llc) in llcs.iter().enumerate() {
                    if shown == RENDER_CHILDREN_MAX {
                        let _ = writeln!(out, "      ... {} more LLC(s)", llcs.len() - shown);
                        break;
                    }
                    let cpus = self.select(|c| c.llc_id == llc);
                    let cores = self.child_ids(|c| c.llc_id == llc, |c| c.smt_id);
                    let _ = writeln!(out, "      llc {llc}: CPUs {} ({} core(s))", format_cpu_list(&cpus), cores.len());
                    let (kind, children) = if with_clusters {
                        ("cluster", self.child_ids(|c| c.llc_id == llc, |c| c.cluster_id))
                    } else {
                        ("core", cores)
                    };
                    for (shown, &child) in children.iter().enumerate() {
                        if shown == RENDER_CHILDREN_MAX {
                            let _ = writeln!(out, "        ... {} more {kind}(s)", children.len() - shown);
                            break;
                        }
                        let cpus = match kind {
                            "cluster" => self.select(|c| c.cluster_id == child),
                            _ => self.select(|c| c.smt_id == child),
                        };
                        let _ = writeln!(out, "        {kind} {child}: CPUs {}", format_cpu_list(&cpus));
                    }
                }
            }
        }
    }

    fn select(&self, keep: impl Fn(&CpuTopo) -> bool) -> Vec<u32> {
        self.cpus.iter().filter(|c| keep(c)).map(|c| c.cpu).collect()
    }

    /// The distinct `id`s of the CPUs that `keep` selects, ascending.
    fn child_ids(&self, keep: impl Fn(&CpuTopo) -> bool, id: impl Fn(&CpuTopo) -> u32) -> Vec<u32> {
        let mut ids: Vec<u32> = self.cpus.iter().filter(|c| keep(c)).map(id).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    fn render_domains_of(&self, cpu: u32, domains: &Domains, out: &mut String) {
        let _ = writeln!(out, "\nsched domains of CPU {cpu} (Linux 7.3 rules, lowest first):");
        let rows: Vec<[String; 8]> = domains
            .of(cpu)
            .iter()
            .map(|sd| {
                let level = match sd.level {
                    DomainLevel::Numa(_) => format!("{} d<={}", sd.level, sd.numa_distance),
                    _ => sd.level.to_string(),
                };
                [
                    level,
                    format_cpu_list(domains.span(sd)),
                    sd.span_weight.to_string(),
                    domains.nr_groups(sd).to_string(),
                    sd.imbalance_pct.to_string(),
                    sd.cache_nice_tries.to_string(),
                    format!("{}-{}", sd.min_interval_ms, sd.max_interval_ms),
                    sd_flags_to_string(sd.flags),
                ]
            })
            .collect();
        if rows.is_empty() {
            let _ = writeln!(out, "  none (a single CPU needs no balancing)");
        } else {
            let header = ["level", "span", "weight", "groups", "imb%", "nice", "interval_ms", "flags"];
            let mut widths = header.map(str::len);
            for row in &rows {
                for (width, cell) in widths.iter_mut().zip(row) {
                    *width = (*width).max(cell.len());
                }
            }
            let line = |cells: [&str; 8]| {
                let mut text = String::from(" ");
                for (i, cell) in cells.iter().enumerate() {
                    let width = if i == 7 { 0 } else { widths[i] };
                    let _ = write!(text, " {cell:<width$}");
                }
                text.trim_end().to_string()
            };
            let _ = writeln!(out, "{}", line(header));
            for row in &rows {
                let _ = writeln!(out, "{}", line(row.each_ref().map(String::as_str)));
            }
        }
        let _ = writeln!(
            out,
            "  sd_llc_size {}, sd_llc_id {}, sd_share_id {}; SMT active {}, asym capacity {}, clusters {}",
            domains.sd_llc_size(cpu),
            domains.sd_llc_id(cpu),
            domains.sd_share_id(cpu),
            yes_no(domains.sched_smt_active()),
            yes_no(domains.sched_asym_cpucap_active()),
            yes_no(domains.sched_cluster_active())
        );
    }

    fn render_distances(&self, out: &mut String) {
        if self.node_distance.len() < 2 {
            return;
        }
        let _ = writeln!(out, "\nnode distances:");
        let mut header = String::from("  node");
        for node in 0..self.node_distance.len() {
            let _ = write!(header, " {node:>4}");
        }
        let _ = writeln!(out, "{header}");
        for (node, row) in self.node_distance.iter().enumerate() {
            let mut line = format!("  {node:>4}");
            for distance in row {
                let _ = write!(line, " {distance:>4}");
            }
            let _ = writeln!(out, "{line}");
        }
    }

    fn render_costs(&self, out: &mut String) {
        let _ = writeln!(out, "\ncosts (ns):");
        let width = Costs::KEYS.iter().map(|(key, _)| key.len()).max().unwrap_or(0);
        for ((key, value), (_, doc)) in self.costs.values().iter().zip(Costs::KEYS) {
            let _ = writeln!(out, "  {key:<width$} {value:>9}  {doc}");
        }
    }
}

// Field accessors, so rule tables can name a field in a few characters.
fn core(c: &CpuTopo) -> u32 {
    c.smt_id
}
fn cluster(c: &CpuTopo) -> u32 {
    c.cluster_id
}
fn llc(c: &CpuTopo) -> u32 {
    c.llc_id
}
fn package(c: &CpuTopo) -> u32 {
    c.package_id
}
fn node(c: &CpuTopo) -> u32 {
    c.node_id
}
fn capacity(c: &CpuTopo) -> u32 {
    c.capacity
}

/// Children listed per parent in [`Topology::render`] before the rest is summarised.
const RENDER_CHILDREN_MAX: usize = 4;

/// `normalized_sysctl_sched_base_slice` since 6.15.
const NORMALIZED_BASE_SLICE_NS: u64 = 700_000;

/// The base slice the kernel derives at boot with the default logarithmic tunable scaling:
/// 0.70 ms x (1 + ilog2(min(ncpus, 8))). `config::Sysctls` holds the value a run actually uses.
pub fn default_base_slice_ns(nr_cpus: u32) -> u64 {
    let factor = 1 + nr_cpus.clamp(1, 8).ilog2();
    NORMALIZED_BASE_SLICE_NS * u64::from(factor)
}

fn format_ms(ns: u64) -> String {
    format!("{}.{:02}", ns / 1_000_000, (ns % 1_000_000) / 10_000)
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

/// Formats ascending CPU numbers like the kernel's `%*pbl`: runs of two or more become `a-b`,
/// so `[0, 1, 2, 96]` prints as `0-2,96`. An empty list prints as an empty string.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    debug_assert!(cpus.windows(2).all(|pair| pair[0] < pair[1]), "CPU lists are ascending");
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}

/// Parses a sysfs CPU list such as `0-3,8,10-11` (surrounding whitespace allowed, empty means
/// no CPUs) into ascending, de-duplicated CPU numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    let text = text.trim();
    if text.is_empty() {
        return Ok(cpus);
    }
    for item in text.split(',') {
        let item = item.trim();
        let number = |s: &str| {
            s.trim().parse::<u32>().map_err(|_| format!("`{item}` in CPU list `{text}` is not a CPU number or range"))
        };
        let (first, last) = match item.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => (number(item)?, number(item)?),
        };
        if first > last || last >= MAX_CPUS * 2 {
            return Err(format!("`{item}` in CPU list `{text}` is not a valid range"));
        }
        cpus.extend(first..=last);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// A scheduling-domain level, named as the kernel prints it in `sched_verbose` output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DomainLevel {
    /// SMT siblings of one core.
    Smt,
    /// A cluster inside an LLC (L2 or L3-tag sharing).
    Cls,
    /// The LLC (`cpu_coregroup_mask`).
    Mc,
    /// The package level; its span is the CPU's node (`tl_pkg_mask` returns `cpu_node_mask`),
    /// and x86 drops it when a package holds several nodes.
    Pkg,
    /// The NUMA identity level: one node (distance 10), added by `sched_init_numa`.
    Node,
    /// NUMA level `j` of `sched_init_numa`: the nodes within the `j`-th smallest distance.
    Numa(u8),
}

impl fmt::Display for DomainLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            DomainLevel::Smt => "SMT",
            DomainLevel::Cls => "CLS",
            DomainLevel::Mc => "MC",
            DomainLevel::Pkg => "PKG",
            DomainLevel::Node => "NODE",
            DomainLevel::Numa(_) => "NUMA",
        };
        f.write_str(name)
    }
}

/// An interned CPU set: an index into [`Domains`]' span table. All CPUs of one LLC share one
/// `SpanId` for their MC domain, which keeps a 4096-CPU tree small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SpanId(pub u32);

/// The groups of a domain, in kernel order (starting with the group that contains the domain's
/// CPU): an interned list of spans read from position `first`, wrapping around. Group lists of
/// different CPUs that are rotations of each other share storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupRing {
    list: u32,
    first: u32,
}

/// One scheduling domain of one CPU, as `cpu_attach_domain` leaves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedDomain {
    pub level: DomainLevel,
    /// The CPUs of the domain; read them with [`Domains::span`].
    pub span: SpanId,
    pub span_weight: u32,
    /// `SD_*` bits.
    pub flags: u32,
    pub imbalance_pct: u32,
    pub cache_nice_tries: u32,
    pub busy_factor: u32,
    /// `min_interval` and the initial `balance_interval`: the span weight, in ms.
    pub min_interval_ms: u32,
    /// `max_interval`: twice the span weight, in ms.
    pub max_interval_ms: u32,
    /// The node distance a NUMA level covers, 10 for NODE, 0 below NODE.
    pub numa_distance: u32,
    pub groups: GroupRing,
}

/// The scheduling domains of every CPU plus the per-CPU shortcuts the fair class reads
/// (`sd_llc`, `sd_llc_size`, `sd_llc_id`, `sd_share_id`, `sd_numa`) and the global switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Domains {
    spans: Vec<Box<[u32]>>,
    group_lists: Vec<Box<[SpanId]>>,
    per_cpu: Vec<Vec<SchedDomain>>,
    llc_index: Vec<Option<u8>>,
    numa_index: Vec<Option<u8>>,
    asym_index: Vec<Option<u8>>,
    llc_size: Vec<u32>,
    llc_id: Vec<u32>,
    share_id: Vec<u32>,
    smt_active: bool,
    asym_active: bool,
    cluster_active: bool,
}

impl Domains {
    /// The domains of `cpu`, lowest (smallest span) first; empty on a one-CPU machine.
    pub fn of(&self, cpu: u32) -> &[SchedDomain] {
        &self.per_cpu[cpu as usize]
    }

    pub fn nr_cpus(&self) -> u32 {
        self.per_cpu.len() as u32
    }

    /// The CPUs of an interned span, ascending.
    pub fn cpus(&self, span: SpanId) -> &[u32] {
        &self.spans[span.0 as usize]
    }

    /// The CPUs of a domain, ascending.
    pub fn span(&self, sd: &SchedDomain) -> &[u32] {
        self.cpus(sd.span)
    }

    /// Whether `cpu` lies in the domain (`cpumask_test_cpu(cpu, sched_domain_span(sd))`).
    pub fn span_contains(&self, sd: &SchedDomain, cpu: u32) -> bool {
        self.span(sd).binary_search(&cpu).is_ok()
    }

    pub fn nr_groups(&self, sd: &SchedDomain) -> usize {
        self.group_lists[sd.groups.list as usize].len()
    }

    /// The group spans of a domain in kernel order: the group holding the domain's CPU first,
    /// then the others as the kernel links them.
    pub fn groups<'a>(&'a self, sd: &SchedDomain) -> impl Iterator<Item = &'a [u32]> + 'a {
        let list = &self.group_lists[sd.groups.list as usize];
        let first = sd.groups.first as usize;
        list[first..].iter().chain(&list[..first]).map(move |&span| self.cpus(span))
    }

    /// The interned spans of a domain's groups, in the order of [`Domains::groups`]: the
    /// identity of each `struct sched_group` (and of its `sched_group_capacity`), which the
    /// balancer uses to keep per-group state built once per topology.
    pub fn group_spans<'a>(&'a self, sd: &SchedDomain) -> impl Iterator<Item = SpanId> + 'a {
        let list = &self.group_lists[sd.groups.list as usize];
        let first = sd.groups.first as usize;
        list[first..].iter().chain(&list[..first]).copied()
    }

    /// The `g`-th group span of a domain in the order of [`Domains::group_spans`].
    pub fn group_span_at(&self, sd: &SchedDomain, g: usize) -> SpanId {
        let list = &self.group_lists[sd.groups.list as usize];
        list[(sd.groups.first as usize + g) % list.len()]
    }

    /// How many interned spans exist (bound of every [`SpanId`]).
    pub fn nr_spans(&self) -> usize {
        self.spans.len()
    }

    /// The index of `sd_llc` in [`Domains::of`]`(cpu)`, if `cpu` has one.
    pub fn sd_llc_level(&self, cpu: u32) -> Option<usize> {
        self.llc_index[cpu as usize].map(usize::from)
    }

    /// `sd_llc`: the highest domain of `cpu` sharing the LLC, if any.
    pub fn sd_llc(&self, cpu: u32) -> Option<&SchedDomain> {
        self.llc_index[cpu as usize].map(|i| &self.per_cpu[cpu as usize][i as usize])
    }

    /// `sd_llc_size`: the weight of `sd_llc`, 1 without one (`wake_wide`'s factor).
    pub fn sd_llc_size(&self, cpu: u32) -> u32 {
        self.llc_size[cpu as usize]
    }

    /// `sd_llc_id`: a dense LLC number allocated in CPU order; equal ids share a cache.
    pub fn sd_llc_id(&self, cpu: u32) -> u32 {
        self.llc_id[cpu as usize]
    }

    /// `sd_share_id`: the first CPU of the cluster domain, else of the LLC domain, else `cpu`.
    pub fn sd_share_id(&self, cpu: u32) -> u32 {
        self.share_id[cpu as usize]
    }

    /// `sd_numa`: the lowest domain of `cpu` with SD_NUMA.
    pub fn sd_numa(&self, cpu: u32) -> Option<&SchedDomain> {
        self.numa_index[cpu as usize].map(|i| &self.per_cpu[cpu as usize][i as usize])
    }

    /// `sd_asym_cpucapacity`: the lowest domain of `cpu` spanning every capacity value.
    pub fn sd_asym_cpucapacity(&self, cpu: u32) -> Option<&SchedDomain> {
        self.asym_index[cpu as usize].map(|i| &self.per_cpu[cpu as usize][i as usize])
    }

    pub fn sched_smt_active(&self) -> bool {
        self.smt_active
    }
    pub fn sched_asym_cpucap_active(&self) -> bool {
        self.asym_active
    }
    pub fn sched_cluster_active(&self) -> bool {
        self.cluster_active
    }

    /// All domains of all CPUs (576 on `spr-2s-192`: SMT, MC and NUMA for each of 192 CPUs).
    pub fn nr_domains(&self) -> usize {
        self.per_cpu.iter().map(Vec::len).sum()
    }
}

/// The per-CPU masks of one topology level (`sched_domain_topology_level`): its kernel flags and,
/// for each CPU, the span `tl->mask(cpu)` returns.
struct LevelMask {
    level: DomainLevel,
    topology_flags: u32,
    numa_distance: u32,
    per_cpu: Vec<SpanId>,
}

/// A domain as `build_sched_domains` creates it, before groups and degenerate removal. Entry `k`
/// of a CPU's list belongs to level `k`, because every CPU builds levels in order and only stops
/// early (once a span covers the machine).
#[derive(Clone, Copy)]
struct RawDomain {
    span: SpanId,
    weight: u32,
    flags: u32,
    imbalance_pct: u32,
    cache_nice_tries: u32,
}

/// A raw domain with its groups, the unit the degenerate rules work on. Groups are interned only
/// for the domains that survive, so the many one-CPU SMT domains of a big `smp:N` store nothing.
struct Draft {
    level: usize,
    raw: RawDomain,
    groups: Vec<SpanId>,
}

struct DomainBuilder<'t> {
    topology: &'t Topology,
    spans: Vec<Box<[u32]>>,
    span_index: BTreeMap<Box<[u32]>, SpanId>,
    singles: Vec<Option<SpanId>>,
    group_lists: Vec<Box<[SpanId]>>,
    group_index: BTreeMap<Box<[SpanId]>, u32>,
    /// Generation marks for "covered" sets: CPU `c` is covered iff `marks[c] == stamp`.
    marks: Vec<u32>,
    stamp: u32,
    /// Distinct capacity values, ascending; asymmetry flags need at least two.
    capacities: Vec<u32>,
}

impl<'t> DomainBuilder<'t> {
    fn new(topology: &'t Topology) -> DomainBuilder<'t> {
        let n = topology.cpus.len();
        let mut capacities: Vec<u32> = topology.cpus.iter().map(|c| c.capacity).collect();
        capacities.sort_unstable();
        capacities.dedup();
        DomainBuilder {
            topology,
            spans: Vec::new(),
            span_index: BTreeMap::new(),
            singles: vec![None; n],
            group_lists: Vec::new(),
            group_index: BTreeMap::new(),
            marks: vec![0; n],
            stamp: 0,
            capacities,
        }
    }

    fn intern(&mut self, cpus: Vec<u32>) -> SpanId {
        debug_assert!(!cpus.is_empty() && cpus.windows(2).all(|p| p[0] < p[1]));
        if cpus.len() == 1 {
            return self.single(cpus[0]);
        }
        if let Some(&id) = self.span_index.get(cpus.as_slice()) {
            return id;
        }
        let id = SpanId(self.spans.len() as u32);
        let boxed: Box<[u32]> = cpus.into_boxed_slice();
        self.span_index.insert(boxed.clone(), id);
        self.spans.push(boxed);
        id
    }

    fn single(&mut self, cpu: u32) -> SpanId {
        if let Some(id) = self.singles[cpu as usize] {
            return id;
        }
        let id = SpanId(self.spans.len() as u32);
        self.spans.push(Box::new([cpu]));
        self.singles[cpu as usize] = Some(id);
        id
    }

    fn cpus(&self, id: SpanId) -> &[u32] {
        &self.spans[id.0 as usize]
    }

    fn is_subset(&self, small: SpanId, big: SpanId) -> bool {
        small == big || {
            let big = self.cpus(big);
            self.cpus(small).iter().all(|cpu| big.binary_search(cpu).is_ok())
        }
    }

    /// One span per distinct `key`, handed to every CPU with that key.
    fn spans_by(&mut self, key: impl Fn(&CpuTopo) -> u32) -> Vec<SpanId> {
        let n = self.topology.cpus.len();
        let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); n];
        for c in &self.topology.cpus {
            buckets[key(c) as usize].push(c.cpu);
        }
        let ids: Vec<Option<SpanId>> =
            buckets.into_iter().map(|cpus| if cpus.is_empty() { None } else { Some(self.intern(cpus)) }).collect();
        self.topology.cpus.iter().map(|c| ids[key(c) as usize].unwrap_or(SpanId(0))).collect()
    }

    /// The topology levels in kernel order: SMT, CLS, MC, PKG (unless a package holds several
    /// nodes), NODE, then one NUMA level per distinct remote distance.
    fn levels(&mut self) -> Vec<LevelMask> {
        let topology = self.topology;
        let smt = self.spans_by(|c| c.smt_id);
        let cluster = self.spans_by(|c| c.cluster_id);
        let llc = self.spans_by(|c| c.llc_id);
        let node = self.spans_by(|c| c.node_id);
        // arm64 `cpu_clustergroup_mask`: a cluster that covers the whole LLC adds nothing, so
        // the level falls back to the SMT mask and degenerates (commit bfcc4397435d).
        let cls = (0..topology.cpus.len())
            .map(|cpu| {
                let covers_llc = self.cpus(cluster[cpu]).len() >= self.cpus(llc[cpu]).len();
                if covers_llc { smt[cpu] } else { cluster[cpu] }
            })
            .collect();
        let level =
            |level, topology_flags, numa_distance, per_cpu| LevelMask { level, topology_flags, numa_distance, per_cpu };
        let mut levels = vec![
            level(DomainLevel::Smt, SD_SHARE_CPUCAPACITY | SD_SHARE_LLC, 0, smt),
            level(DomainLevel::Cls, SD_CLUSTER | SD_SHARE_LLC, 0, cls),
            level(DomainLevel::Mc, SD_SHARE_LLC, 0, llc),
        ];
        let one_node_per_package = topology.nr_nodes() == topology.nr_packages();
        if one_node_per_package {
            levels.push(level(DomainLevel::Pkg, 0, 0, node.clone()));
        }
        levels.push(level(DomainLevel::Node, 0, LOCAL_DISTANCE, node));
        let mut distances: Vec<u32> = topology.node_distance.iter().flatten().copied().collect();
        distances.sort_unstable();
        distances.dedup();
        for (j, &distance) in distances.iter().enumerate().skip(1) {
            let nodes = topology.nr_nodes();
            let per_node: Vec<SpanId> = (0..nodes)
                .map(|from| {
                    let cpus = topology
                        .cpus
                        .iter()
                        .filter(|c| topology.node_distance[from as usize][c.node_id as usize] <= distance)
                        .map(|c| c.cpu)
                        .collect();
                    self.intern(cpus)
                })
                .collect();
            let per_cpu = topology.cpus.iter().map(|c| per_node[c.node_id as usize]).collect();
            let j = u8::try_from(j).unwrap_or(u8::MAX);
            levels.push(level(DomainLevel::Numa(j), SD_NUMA, distance, per_cpu));
        }
        levels
    }

    /// `asym_cpu_capacity_classify`: how many of the machine's capacity values a span sees.
    fn asym_flags(&self, span: SpanId) -> u32 {
        if self.capacities.len() < 2 {
            return 0;
        }
        let mut seen: Vec<u32> = self.cpus(span).iter().map(|&cpu| self.topology.cpus[cpu as usize].capacity).collect();
        seen.sort_unstable();
        seen.dedup();
        match seen.len() {
            0 | 1 => 0,
            count if count < self.capacities.len() => SD_ASYM_CPUCAPACITY,
            _ => SD_ASYM_CPUCAPACITY | SD_ASYM_CPUCAPACITY_FULL,
        }
    }

    /// `sd_init`: defaults, then topology properties turned into behaviour.
    fn sd_init(&self, mask: &LevelMask, span: SpanId, weight: u32) -> RawDomain {
        let mut flags = SD_INIT_FLAGS | mask.topology_flags | self.asym_flags(span);
        let mut imbalance_pct = 117;
        let cache_nice_tries;
        if flags & SD_SHARE_CPUCAPACITY != 0 {
            imbalance_pct = 110;
            cache_nice_tries = 0;
        } else if flags & SD_SHARE_LLC != 0 {
            cache_nice_tries = 1;
        } else if flags & SD_NUMA != 0 {
            cache_nice_tries = 2;
            flags &= !SD_PREFER_SIBLING;
            flags |= SD_SERIALIZE;
            if mask.numa_distance > NODE_RECLAIM_DISTANCE {
                flags &= !(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE);
            }
        } else {
            cache_nice_tries = 1;
        }
        RawDomain { span, weight, flags, imbalance_pct, cache_nice_tries }
    }

    /// `build_sched_domains`, first pass: every CPU climbs the levels until a span covers the
    /// machine. A child that is not inside its parent's mask widens the parent, as the kernel's
    /// "arch topology borken" fix-up does.
    fn raw_domains(&mut self, levels: &[LevelMask]) -> Vec<Vec<RawDomain>> {
        let n = self.topology.cpus.len();
        let all = self.intern((0..n as u32).collect());
        let mut raw = Vec::with_capacity(n);
        for cpu in 0..n {
            let mut list: Vec<RawDomain> = Vec::with_capacity(levels.len());
            for mask in levels {
                let mut span = mask.per_cpu[cpu];
                let weight = self.cpus(span).len() as u32;
                if let Some(child) = list.last().map(|d| d.span)
                    && !self.is_subset(child, span)
                {
                    let mut union: Vec<u32> = self.cpus(span).to_vec();
                    union.extend_from_slice(self.cpus(child));
                    union.sort_unstable();
                    union.dedup();
                    span = self.intern(union);
                }
                list.push(self.sd_init(mask, span, weight));
                if span == all {
                    break;
                }
            }
            raw.push(list);
        }
        raw
    }

    fn next_stamp(&mut self) -> u32 {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.marks.iter_mut().for_each(|mark| *mark = 0);
            self.stamp = 1;
        }
        self.stamp
    }

    fn cover(&mut self, span: SpanId, stamp: u32) {
        for &cpu in &self.spans[span.0 as usize] {
            self.marks[cpu as usize] = stamp;
        }
    }

    /// The CPUs of `span` starting at `cpu` and wrapping (`for_each_cpu_wrap`).
    fn wrap_order(&self, span: SpanId, cpu: u32) -> Vec<u32> {
        let cpus = self.cpus(span);
        let start = cpus.partition_point(|&c| c < cpu);
        cpus[start..].iter().chain(&cpus[..start]).copied().collect()
    }

    /// `build_sched_groups`: walking the span from `cpu`, each uncovered CPU contributes its
    /// child-domain span (`get_group`); a CPU whose own tree stopped below this level, or the
    /// lowest level, contributes itself.
    fn groups(&mut self, raw: &[Vec<RawDomain>], cpu: u32, k: usize) -> Vec<SpanId> {
        let stamp = self.next_stamp();
        let mut groups = Vec::new();
        for j in self.wrap_order(raw[cpu as usize][k].span, cpu) {
            if self.marks[j as usize] == stamp {
                continue;
            }
            let tree = &raw[j as usize];
            let group = if k > 0 && tree.len() > k { tree[k - 1].span } else { self.single(j) };
            self.cover(group, stamp);
            groups.push(group);
        }
        groups
    }

    /// `build_overlap_sched_groups` for SD_NUMA domains: each uncovered CPU whose tree reaches
    /// this level contributes its child span; when that child sticks out of our span (NUMA
    /// diameter of three or more), it descends to the largest child that fits and skips
    /// children equal to their parent (`find_descended_sibling`).
    fn overlap_groups(&mut self, raw: &[Vec<RawDomain>], cpu: u32, k: usize) -> Vec<SpanId> {
        let span = raw[cpu as usize][k].span;
        let stamp = self.next_stamp();
        let mut groups = Vec::new();
        for j in self.wrap_order(span, cpu) {
            let tree = &raw[j as usize];
            if self.marks[j as usize] == stamp || tree.len() <= k {
                continue;
            }
            let mut s = k;
            if s > 0 && !self.is_subset(tree[s - 1].span, span) {
                while s > 0 && !self.is_subset(tree[s - 1].span, span) {
                    s -= 1;
                }
                while s > 0 && tree[s - 1].span == tree[s].span {
                    s -= 1;
                }
            }
            let group = if s > 0 { tree[s - 1].span } else { tree[s].span };
            self.cover(group, stamp);
            groups.push(group);
        }
        groups
    }

    /// Stores a group list once per rotation class: the list is rotated to start at the group
    /// holding the lowest CPU, interned, and `first` remembers where the kernel order begins.
    fn intern_groups(&mut self, groups: Vec<SpanId>) -> GroupRing {
        debug_assert!(!groups.is_empty(), "a domain has at least one group");
        let lowest = |g: &SpanId| self.cpus(*g)[0];
        let rotation = (0..groups.len()).min_by_key(|&i| (lowest(&groups[i]), i)).unwrap_or(0);
        let mut canonical = groups;
        canonical.rotate_left(rotation);
        let first = ((canonical.len() - rotation) % canonical.len()) as u32;
        if let Some(&list) = self.group_index.get(canonical.as_slice()) {
            return GroupRing { list, first };
        }
        let list = self.group_lists.len() as u32;
        let boxed = canonical.into_boxed_slice();
        self.group_index.insert(boxed.clone(), list);
        self.group_lists.push(boxed);
        GroupRing { list, first }
    }

    fn build(mut self) -> Domains {
        let levels = self.levels();
        let raw = self.raw_domains(&levels);
        let n = self.topology.cpus.len();
        let mut per_cpu = Vec::with_capacity(n);
        let mut asym_active = false;
        for cpu in 0..n as u32 {
            let mut drafts = Vec::with_capacity(raw[cpu as usize].len());
            for (k, domain) in raw[cpu as usize].iter().enumerate() {
                asym_active |= domain.flags & SD_ASYM_CPUCAPACITY != 0;
                let groups = if domain.flags & SD_NUMA != 0 {
                    self.overlap_groups(&raw, cpu, k)
                } else {
                    self.groups(&raw, cpu, k)
                };
                drafts.push(Draft { level: k, raw: *domain, groups });
            }
            let attached = self.attach(drafts);
            let mut domains = Vec::with_capacity(attached.len());
            for draft in attached {
                let mask = &levels[draft.level];
                domains.push(SchedDomain {
                    level: mask.level,
                    span: draft.raw.span,
                    span_weight: self.cpus(draft.raw.span).len() as u32,
                    flags: draft.raw.flags,
                    imbalance_pct: draft.raw.imbalance_pct,
                    cache_nice_tries: draft.raw.cache_nice_tries,
                    busy_factor: 16,
                    min_interval_ms: draft.raw.weight,
                    max_interval_ms: 2 * draft.raw.weight,
                    numa_distance: mask.numa_distance,
                    groups: self.intern_groups(draft.groups),
                });
            }
            per_cpu.push(domains);
        }
        self.finish(per_cpu, asym_active)
    }

    /// `sd_degenerate`: a one-CPU span, or no flag that could act (group flags need two groups).
    fn degenerate(&self, d: &Draft) -> bool {
        if self.cpus(d.raw.span).len() == 1 {
            return true;
        }
        if d.raw.flags & SD_DEGENERATE_GROUPS_MASK != 0 && d.groups.len() > 1 {
            return false;
        }
        d.raw.flags & SD_WAKE_AFFINE == 0
    }

    /// `sd_parent_degenerate`: the parent is useless, or spans the same CPUs without a flag the
    /// child lacks (group flags do not count when the parent has a single group).
    fn parent_degenerate(&self, child: &Draft, parent: &Draft) -> bool {
        if self.degenerate(parent) {
            return true;
        }
        if child.raw.span != parent.raw.span {
            return false;
        }
        let mut parent_flags = parent.raw.flags;
        if parent.groups.len() == 1 {
            parent_flags &= !SD_DEGENERATE_GROUPS_MASK;
        }
        !child.raw.flags & parent_flags == 0
    }

    /// `cpu_attach_domain`: drop degenerate parents bottom-up (handing SD_PREFER_SIBLING down),
    /// then the base domain if it is degenerate itself.
    fn attach(&self, mut drafts: Vec<Draft>) -> Vec<Draft> {
        let mut i = 0;
        while i + 1 < drafts.len() {
            if self.parent_degenerate(&drafts[i], &drafts[i + 1]) {
                if drafts[i + 1].raw.flags & SD_PREFER_SIBLING != 0 {
                    drafts[i].raw.flags |= SD_PREFER_SIBLING;
                }
                drafts.remove(i + 1);
            } else {
                i += 1;
            }
        }
        if drafts.first().is_some_and(|base| self.degenerate(base)) {
            drafts.remove(0);
        }
        drafts
    }

    /// `update_top_cache_domain` and the 7.3 LLC id allocation, for every CPU.
    fn finish(self, per_cpu: Vec<Vec<SchedDomain>>, asym_active: bool) -> Domains {
        let topology = self.topology;
        let n = topology.cpus.len();
        let position =
            |list: &[SchedDomain], flag: u32| list.iter().position(|sd| sd.flags & flag != 0).map(|i| i as u8);
        let mut llc_index = Vec::with_capacity(n);
        let mut llc_size = Vec::with_capacity(n);
        let mut share_id = Vec::with_capacity(n);
        for (cpu, list) in per_cpu.iter().enumerate() {
            // SD_SHARE_LLC is a shared-child flag: the search stops at the first domain without it.
            let top = list.iter().take_while(|sd| sd.flags & SD_SHARE_LLC != 0).count();
            let llc = top.checked_sub(1).map(|i| i as u8);
            llc_index.push(llc);
            llc_size.push(llc.map_or(1, |i| list[i as usize].span_weight));
            let mut id = llc.map_or(cpu as u32, |i| self.cpus(list[i as usize].span)[0]);
            if let Some(i) = position(list, SD_CLUSTER) {
                id = self.cpus(list[i as usize].span)[0];
            }
            share_id.push(id);
        }
        // 7.3 hands out the lowest free LLC id to each new LLC met in CPU order.
        let mut dense: Vec<Option<u32>> = vec![None; n];
        let mut next = 0;
        let llc_id = topology
            .cpus
            .iter()
            .map(|c| {
                *dense[c.llc_id as usize].get_or_insert_with(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect();
        Domains {
            numa_index: per_cpu.iter().map(|list| position(list, SD_NUMA)).collect(),
            asym_index: per_cpu.iter().map(|list| position(list, SD_ASYM_CPUCAPACITY_FULL)).collect(),
            cluster_active: per_cpu.iter().any(|list| position(list, SD_CLUSTER).is_some()),
            smt_active: topology.sched_smt_active(),
            asym_active,
            llc_index,
            llc_size,
            llc_id,
            share_id,
            per_cpu,
            spans: self.spans,
            group_lists: self.group_lists,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Presets. Each `source` says where the figures come from; `[estimate]` marks assumptions.

fn uniform_preset(name: &str, shape: UniformShape) -> Topology {
    match Topology::uniform(name, shape) {
        Ok(topology) => topology,
        Err(error) => unreachable!("preset {name} has a valid shape: {error}"),
    }
}

fn shape(packages: u32, nodes: u32, llcs: u32, cores: u32, threads: u32, remote: u32) -> UniformShape {
    UniformShape {
        packages,
        nodes_per_package: nodes,
        llcs_per_node: llcs,
        cores_per_llc: cores,
        threads_per_core: threads,
        remote_distance: remote,
    }
}

fn preset_vm_2cpu() -> Topology {
    let mut t = uniform_preset("vm-2cpu", shape(1, 1, 1, 2, 1, 0));
    t.description = "2 vCPUs of a KVM guest on AMD EPYC (Zen 4), no SMT exposed, one shared \
                     32 MiB L3: the development and CI machine"
        .into();
    t.source = "lscpu and /sys on the development VM (AMD EPYC family 25 model 17 under KVM: \
                2 CPUs, 1 socket, L2 1 MiB per CPU, L3 32 MiB shared by CPUs 0-1, cpuidle \
                states POLL and haltpoll 1 us); costs: workloads.md 10.2 with VM IPI costs \
                [estimate]"
        .into();
    t.costs = Costs {
        // An ICR write traps to the hypervisor unless IPI virtualisation is available, and a
        // halted vCPU is woken by the host scheduler [estimate].
        wakeup_remote_ipi_ns: 1_500,
        ipi_receive_ns: 2_000,
        // The APIC timer's expiry and the TSC-deadline write that re-arms it both exit to
        // the hypervisor, on top of the handler's own work [estimate].
        timer_irq_ns: 2_000,
        // Waking a halted vCPU through the host takes tens of microseconds [estimate]. The
        // development VM boots with haltpoll.guest_halt_poll_ns=0, so it never polls: every
        // cross-CPU wakeup is an IPI to a halted vCPU (about 24 us measured by `validate`).
        idle_exit_ns_deep: 20_000,
        idle_deep_residency_ns: 200_000,
        idle_poll_ns: 0,
        ..Costs::x86_server()
    };
    t
}

fn preset_desktop_8c16t() -> Topology {
    let mut t = uniform_preset("desktop-8c16t", shape(1, 1, 1, 8, 2, 0));
    t.description = "8-core desktop with SMT2 and one L3, e.g. AMD Ryzen 7 7700X (Zen 4, one \
                     CCD, 32 MiB L3); core c holds CPUs c and c+8"
        .into();
    t.source = "vendor spec sheet class: 8 cores / 16 threads, one 32 MiB L3 per CCD; sibling \
                numbering c, c+8 as Linux enumerates AMD desktop parts; costs: workloads.md \
                10.2 scaled for a ~5 GHz client part, C-state figures [estimate]"
        .into();
    t.costs = Costs {
        syscall_ns: 70,
        context_switch_ns: 600,
        context_switch_mm_ns: 1_000,
        wakeup_local_ns: 300,
        wakeup_remote_ipi_ns: 500,
        ipi_receive_ns: 700,
        timer_irq_ns: 700,
        wakeup_polling_idle_ns: 300,
        idle_exit_ns_deep: 100_000,
        idle_deep_residency_ns: 400_000,
        migration_llc_ns: 2_000,
        ..Costs::x86_server()
    };
    t
}

fn preset_xeon_8369hb_4s() -> Topology {
    let mut t = uniform_preset("xeon-8369hb-4s", shape(4, 1, 1, 24, 2, 21));
    t.description = "4-socket Intel Xeon Platinum 8369HB (3rd-gen Xeon Scalable, Cooper Lake, \
                     Skylake-derived cores like Cascade Lake), 24 cores x SMT2 per socket, one \
                     33 MiB L3 per socket: 192 CPUs"
        .into();
    t.source = "Alibaba Cloud instance docs name the 8369HB a Cooper Lake part (3.3 GHz base, \
                3.8 GHz turbo); its L3 reads 33792 KB, which at Skylake-SP's 1.375 MiB per core \
                gives 24 cores per socket [estimate]; 4 sockets fully linked by UPI with SLIT \
                10/21 [estimate]; idle: intel_idle skx_cstates (C1 2 us, C6 133 us exit, 600 us \
                residency); other costs workloads.md 10.2"
        .into();
    t.costs = Costs {
        idle_exit_ns_c1: 2_000,
        idle_exit_ns_deep: 133_000,
        idle_deep_residency_ns: 600_000,
        ..Costs::x86_server()
    };
    t
}

fn preset_ampere_altra_80() -> Topology {
    let mut t = uniform_preset("ampere-altra-80", shape(1, 1, 40, 2, 1, 0));
    for c in &mut t.cpus {
        c.cluster_id = c.llc_id;
    }
    t.description = "Ampere Altra Q80-30: 80 Neoverse N1 cores without SMT, 1 MiB private L2 \
                     each, 32 MiB system-level cache; Linux sees 2-core clusters and no shared \
                     CPU-side LLC, so the MC domain spans one core pair"
        .into();
    t.source = "Ampere Altra spec sheet (80 cores, 1 MiB L2/core, 32 MiB SLC); the SLC is not \
                described as a CPU cache in the PPTT, which describes 2-core clusters. Darren \
                Hart, \"topology: make core_mask include at least cluster_siblings\" (LKML \
                2022-04-11, commit db1e59483dfd) extends the MC mask to the pair and reports \
                domains CLS [0-1], DIE [0-79], NUMA [0-159] on a 2-socket Altra; since \
                bfcc4397435d (\"arch_topology: Limit span of cpu_clustergroup_mask()\") CLS \
                collapses and MC [pair] stays, so sd_llc_size is 2. One node per socket \
                (monolithic mode). Costs: arm64 figures [estimate]"
        .into();
    t.costs = arm64_server_costs(4_500, 4_500, 19_200);
    t
}

fn preset_spr_2s_192() -> Topology {
    let mut t = uniform_preset("spr-2s-192", shape(2, 1, 1, 48, 2, 21));
    t.description = "2-socket Intel Sapphire Rapids (e.g. Xeon Platinum 8468, 48 cores, 105 MiB \
                     L3 per socket), SMT2, SNC off: 192 CPUs, one LLC and one node per socket"
        .into();
    t.source = "Intel ARK class figures (48 cores / 96 threads, 105 MiB L3 per socket); SLIT \
                10/21 as 2-socket Intel firmware usually reports [estimate]; idle: intel_idle \
                spr_cstates (C1 1 us, C6 290 us exit, 800 us residency); other costs \
                workloads.md 10.2"
        .into();
    t.costs = Costs::x86_server();
    t
}

fn preset_arm64_128() -> Topology {
    let mut t = uniform_preset("arm64-128", shape(2, 2, 1, 32, 1, 20));
    for c in &mut t.cpus {
        c.cluster_id = c.smt_id / 4;
    }
    t.node_distance = vec![vec![10, 12, 20, 22], vec![12, 10, 22, 24], vec![20, 22, 10, 12], vec![22, 24, 12, 10]];
    t.description = "2-socket HiSilicon Kunpeng 920-6426: 128 cores without SMT, 2 dies (NUMA \
                     nodes) per socket with 32 cores and one L3 each, 4-core clusters (CCLs) \
                     sharing an L3 tag partition: the machine the CLS level was written for"
        .into();
    t.source = "openEuler wayca-scheduler benchmark notes (128 cores in 4 dies/NUMA nodes, 8 \
                CCLs per node, 4 cores per CCL); SLIT 10/12/20/22/24 as posted to LKML for \
                this machine (Barry Song and Valentin Schneider's NUMA-diameter threads, \
                2021), which also show its domains at 32/64/96/128 CPUs. With one package \
                holding two nodes the package-level domain is named NODE here (arm64 keeps the \
                PKG name; span and flags are the same). Costs: arm64 figures [estimate]"
        .into();
    t.costs = arm64_server_costs(3_200, 12_800, 16_000);
    t
}

fn preset_rpi5() -> Topology {
    let mut t = uniform_preset("rpi5", shape(1, 1, 1, 4, 1, 0));
    for c in &mut t.cpus {
        c.cluster_id = 0;
    }
    t.description = "Raspberry Pi 5 (BCM2712): 4 Cortex-A76 at 2.4 GHz in one cluster, 512 KiB \
                     private L2 each, 2 MiB shared L3"
        .into();
    t.source = "Raspberry Pi 5 product brief (quad Cortex-A76 2.4 GHz) and Arm's cache \
                figures for BCM2712 (512 KiB L2/core, 2 MiB L3); the cluster spans the LLC, so \
                no CLS level appears. Costs: scaled for a 2.4 GHz client core with LPDDR4X and \
                WFI as the only idle state [estimate]"
        .into();
    t.costs = Costs {
        syscall_ns: 200,
        context_switch_ns: 1_500,
        context_switch_mm_ns: 2_400,
        wakeup_local_ns: 600,
        wakeup_remote_ipi_ns: 900,
        wakeup_select_ns: 0,
        wakeup_remote_enqueue_ns: 0,
        ipi_receive_ns: 1_500,
        timer_irq_ns: 1_500,
        wakeup_polling_idle_ns: 600,
        idle_exit_ns_c1: 1_000,
        idle_exit_ns_deep: 1_000,
        idle_deep_residency_ns: 1_000,
        migration_smt_ns: 0,
        migration_llc_ns: 3_840,
        migration_cross_llc_ns: 12_800,
        migration_cross_node_ns: 19_200,
        copy_ns_per_kib: 200,
        idle_poll_ns: 0,
        ipc: IpcCosts::x86_server(),
        jitter_pct: 10,
    };
    t
}

/// Server-class arm64 costs [estimate]: GICv3 SGIs are cheap to send but slower to take than
/// x86 IPIs, syscalls and switches run about 1.2-1.5x the x86 figures of workloads.md §10.2 at
/// 2.6-3.0 GHz, WFI exits in about 1 us and the deep state is a core power-down.
fn arm64_server_costs(llc_ns: u64, cross_llc_ns: u64, cross_node_ns: u64) -> Costs {
    Costs {
        syscall_ns: 150,
        context_switch_ns: 1_000,
        context_switch_mm_ns: 1_600,
        wakeup_local_ns: 450,
        wakeup_remote_ipi_ns: 600,
        wakeup_select_ns: 0,
        wakeup_remote_enqueue_ns: 0,
        ipi_receive_ns: 1_200,
        timer_irq_ns: 1_200,
        wakeup_polling_idle_ns: 450,
        idle_exit_ns_c1: 1_000,
        idle_exit_ns_deep: 100_000,
        idle_deep_residency_ns: 500_000,
        migration_smt_ns: 0,
        migration_llc_ns: llc_ns,
        migration_cross_llc_ns: cross_llc_ns,
        migration_cross_node_ns: cross_node_ns,
        copy_ns_per_kib: 120,
        // cpuidle-psci has no polling state: arm64 CPUs go straight to WFI.
        idle_poll_ns: 0,
        ipc: IpcCosts::x86_server(),
        jitter_pct: 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Costs are bounded where they are set: one second per operation, 100 % jitter.
    #[test]
    fn costs_are_range_checked() {
        let mut c = Costs::x86_server();
        c.set("context_switch_ns", MAX_COST_NS).unwrap();
        assert_eq!(c.context_switch_ns, MAX_COST_NS);
        for (key, value) in [("context_switch_ns", MAX_COST_NS + 1), ("wait_ns", u64::MAX), ("jitter_pct", 101)] {
            let err = c.set(key, value).expect_err(key);
            assert!(err.starts_with(key), "{err}");
        }
        assert_eq!(c.context_switch_ns, MAX_COST_NS, "a refused value changes nothing");
        assert_eq!(c.ipc.wait_ns, Costs::x86_server().ipc.wait_ns);
        assert!(Costs::check_value("no_such_ns", 1).unwrap_err().contains("unknown cost key"));
    }

    fn levels(domains: &Domains, cpu: u32) -> Vec<String> {
        domains.of(cpu).iter().map(|sd| sd.level.to_string()).collect()
    }

    fn spans(domains: &Domains, cpu: u32) -> Vec<String> {
        domains.of(cpu).iter().map(|sd| format_cpu_list(domains.span(sd))).collect()
    }

    fn groups(domains: &Domains, sd: &SchedDomain) -> Vec<String> {
        domains.groups(sd).map(format_cpu_list).collect()
    }

    #[test]
    fn smp_has_one_mc_level_and_no_smt() {
        let t = Topology::smp(4);
        let d = t.build_domains();
        for cpu in 0..4 {
            assert_eq!(levels(&d, cpu), ["MC"]);
            assert_eq!(spans(&d, cpu), ["0-3"]);
        }
        let mc = &d.of(2)[0];
        assert_eq!(groups(&d, mc), ["2", "3", "0", "1"]);
        assert_eq!(mc.flags, SD_INIT_FLAGS | SD_SHARE_LLC);
        assert_eq!((mc.imbalance_pct, mc.cache_nice_tries), (117, 1));
        assert_eq!((mc.min_interval_ms, mc.max_interval_ms, mc.busy_factor), (4, 8, 16));
        assert_eq!((d.sd_llc_size(2), d.sd_llc_id(2), d.sd_share_id(2)), (4, 0, 0));
        assert!(!d.sched_smt_active() && !t.sched_smt_active());
        assert!(d.sd_numa(0).is_none());
    }

    #[test]
    fn one_cpu_has_no_domains() {
        let d = Topology::smp(1).build_domains();
        assert!(d.of(0).is_empty());
        assert_eq!(d.sd_llc_size(0), 1);
        assert!(d.sd_llc(0).is_none());
    }

    #[test]
    fn smt2_desktop_has_smt_and_mc() {
        let t = Topology::preset("desktop-8c16t").unwrap();
        let d = t.build_domains();
        assert_eq!(levels(&d, 0), ["SMT", "MC"]);
        assert_eq!(spans(&d, 9), ["1,9", "0-15"]);
        let smt = &d.of(9)[0];
        assert_eq!(smt.flags, SD_INIT_FLAGS | SD_SHARE_CPUCAPACITY | SD_SHARE_LLC);
        assert_eq!((smt.imbalance_pct, smt.cache_nice_tries), (110, 0));
        assert_eq!(groups(&d, smt), ["9", "1"]);
        assert_eq!(groups(&d, &d.of(9)[1]).len(), 8);
        assert_eq!(groups(&d, &d.of(9)[1])[0], "1,9");
        assert_eq!(d.sd_llc_size(5), 16);
        assert!(d.sched_smt_active());
        assert_eq!(t.smt_siblings(3), [3, 11]);
    }

    #[test]
    fn spr_has_smt_mc_numa_with_kernel_spans_and_flags() {
        let t = Topology::preset("spr-2s-192").unwrap();
        let d = t.build_domains();
        assert_eq!(levels(&d, 0), ["SMT", "MC", "NUMA"]);
        assert_eq!(spans(&d, 0), ["0,96", "0-47,96-143", "0-191"]);
        assert_eq!(spans(&d, 150), ["54,150", "48-95,144-191", "0-191"]);
        let numa = &d.of(150)[2];
        assert_eq!(numa.level, DomainLevel::Numa(1));
        assert_eq!(numa.numa_distance, 21);
        let expected = SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE | SD_SERIALIZE | SD_NUMA;
        assert_eq!(numa.flags, expected, "{}", sd_flags_to_string(numa.flags));
        assert_eq!((numa.cache_nice_tries, numa.min_interval_ms, numa.max_interval_ms), (2, 192, 384));
        assert_eq!(groups(&d, numa), ["48-95,144-191", "0-47,96-143"]);
        assert_eq!(d.sd_numa(150), Some(numa));
        assert_eq!((d.sd_llc_size(150), d.sd_llc_id(150), d.sd_llc_id(0)), (96, 1, 0));
        assert_eq!(d.sd_share_id(150), 48);
        assert_eq!(d.nr_domains(), 192 * 3);
        assert!(d.span_contains(numa, 3) && !d.span_contains(&d.of(150)[1], 3));
    }

    #[test]
    fn far_numa_levels_drop_wake_affine() {
        let mut t = Topology::preset("spr-2s-192").unwrap();
        t.node_distance = vec![vec![10, 32], vec![32, 10]];
        let d = t.build_domains();
        let numa = &d.of(0)[2];
        assert_eq!(numa.flags & (SD_WAKE_AFFINE | SD_BALANCE_FORK | SD_BALANCE_EXEC), 0);
        assert_ne!(numa.flags & SD_NUMA, 0);
    }

    #[test]
    fn kunpeng_builds_clusters_and_multi_hop_numa() {
        let t = Topology::preset("arm64-128").unwrap();
        let d = t.build_domains();
        assert_eq!(spans(&d, 0), ["0-3", "0-31", "0-63", "0-95", "0-127"]);
        assert_eq!(levels(&d, 0), ["CLS", "MC", "NUMA", "NUMA", "NUMA"]);
        // Node 1 reaches node 2 only at distance 22, so its NUMA(<=20) level degenerates.
        assert_eq!(spans(&d, 32), ["32-35", "32-63", "0-63", "0-95", "0-127"]);
        let distances: Vec<u32> = d.of(32).iter().map(|sd| sd.numa_distance).collect();
        assert_eq!(distances, [0, 0, 12, 22, 24]);
        assert_eq!(d.of(0)[0].flags & SD_CLUSTER, SD_CLUSTER);
        assert!(d.sched_cluster_active());
        assert_eq!((d.sd_share_id(6), d.sd_llc_size(6)), (4, 32));
        // Overlapping NUMA groups for CPU 32 at distance 22: its own 0-63, then node 2's
        // child span clipped to what fits (node 2 alone reaches 0-95 beyond our span).
        assert_eq!(groups(&d, &d.of(32)[3]), ["0-63", "64-95"]);
        for cpu in 0..128 {
            for sd in d.of(cpu) {
                let covered: usize = d.groups(sd).map(<[u32]>::len).sum();
                assert!(covered >= sd.span_weight as usize, "groups cover cpu {cpu} {}", sd.level);
            }
        }
    }

    #[test]
    fn altra_keeps_the_core_pair_as_llc() {
        let d = Topology::preset("ampere-altra-80").unwrap().build_domains();
        assert_eq!(levels(&d, 0), ["MC", "PKG"]);
        assert_eq!(spans(&d, 7), ["6-7", "0-79"]);
        assert_eq!(d.sd_llc_size(7), 2);
        assert_eq!(d.nr_groups(&d.of(7)[1]), 40);
        assert!(!d.sched_cluster_active());
    }

    #[test]
    fn every_preset_validates_and_renders() {
        let presets = Topology::presets();
        let names: Vec<&str> = presets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, PRESET_NAMES);
        for t in &presets {
            t.validate().unwrap();
            let text = t.render();
            assert!(text.starts_with(&t.name), "{text}");
            assert_eq!(text, t.render(), "render is deterministic");
            assert!(text.contains("costs (ns):") && text.contains("base slice"));
        }
        let xeon = Topology::preset("xeon-8369hb-4s").unwrap();
        assert_eq!((xeon.nr_cpus(), xeon.nr_nodes(), xeon.nr_llcs()), (192, 4, 4));
        let rpi = Topology::preset("rpi5").unwrap().build_domains();
        assert_eq!(levels(&rpi, 0), ["MC"]);
    }

    #[test]
    fn render_shows_tree_domains_distances_and_slice() {
        let text = Topology::preset("spr-2s-192").unwrap().render();
        assert!(text.starts_with(
            "spr-2s-192: 192 CPUs, 2 package(s), 2 node(s), 2 LLC(s), 96 core(s), SMT yes (2 threads/core)"
        ));
        assert!(text.contains("      llc 1: CPUs 48-95,144-191 (48 core(s))"), "{text}");
        assert!(text.contains("        core 0: CPUs 0,96"));
        assert!(text.contains("        ... 44 more core(s)"));
        assert!(text.contains("NUMA d<=21"));
        assert!(text.contains("     1   21   10"));
        assert!(text.contains("base slice: 2.80 ms = 0.70 ms x 4"));
        assert!(text.contains("syscall_ns"));
    }

    #[test]
    fn base_slice_follows_log_scaling() {
        let slices: Vec<u64> = [1, 2, 3, 4, 8, 192].map(default_base_slice_ns).to_vec();
        assert_eq!(slices, [700_000, 1_400_000, 1_400_000, 2_100_000, 2_800_000, 2_800_000]);
    }

    #[test]
    fn cpu_lists_format_and_parse() {
        assert_eq!(format_cpu_list(&[]), "");
        assert_eq!(format_cpu_list(&[5]), "5");
        assert_eq!(format_cpu_list(&[0, 1]), "0-1");
        assert_eq!(format_cpu_list(&[0, 96]), "0,96");
        let spr: Vec<u32> = (0..48).chain(96..144).collect();
        assert_eq!(format_cpu_list(&spr), "0-47,96-143");
        assert_eq!(parse_cpu_list(" 0-47,96-143\n").unwrap(), spr);
        assert_eq!(parse_cpu_list("3,1,1-2").unwrap(), [1, 2, 3]);
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<u32>::new());
        assert!(parse_cpu_list("4-2").unwrap_err().contains("`4-2`"));
        assert!(parse_cpu_list("a").is_err());
    }

    #[test]
    fn by_name_accepts_presets_and_smp() {
        assert_eq!(Topology::by_name("smp:8").unwrap().nr_cpus(), 8);
        assert_eq!(Topology::by_name("rpi5").unwrap().nr_cpus(), 4);
        assert!(Topology::by_name("smp:0").unwrap_err().contains("1..=4096"));
        assert!(Topology::by_name("smp:4097").unwrap_err().contains("4097"));
        assert!(Topology::by_name("smp:x").unwrap_err().contains("`x`"));
        let unknown = Topology::by_name("cray").unwrap_err();
        assert!(unknown.contains("vm-2cpu") && unknown.contains("smp:N"), "{unknown}");
    }

    #[test]
    fn validate_rejects_duplicate_cpu() {
        let mut t = Topology::smp(4);
        t.cpus[3].cpu = 2;
        let error = t.check().unwrap_err();
        assert_eq!((error.cpu, error.field), (Some(2), "cpu"));
        assert!(t.validate().unwrap_err().contains("listed twice"));
    }

    #[test]
    fn validate_rejects_smt_siblings_in_different_llcs() {
        let mut t = Topology::preset("desktop-8c16t").unwrap();
        t.cpus = t.cpus.iter().map(|&c| CpuTopo { llc_id: u32::from(c.cpu >= 8), ..c }).collect();
        let error = t.check().unwrap_err();
        assert_eq!((error.cpu, error.field), (Some(8), "llc_id"), "{error}");
        assert!(error.message.contains("SMT siblings share their LLC"), "{error}");
    }

    #[test]
    fn validate_rejects_asymmetric_slit() {
        let mut t = Topology::preset("spr-2s-192").unwrap();
        t.node_distance[0][1] = 20;
        let message = t.validate().unwrap_err();
        assert!(message.contains("`node_distance`") && message.contains("not symmetric"), "{message}");
        t.node_distance = vec![vec![10, 21], vec![21, 11]];
        assert!(t.validate().unwrap_err().contains("[1][1] is 11"));
        t.node_distance = vec![vec![10, 21]];
        assert!(t.validate().unwrap_err().contains("1 rows"));
    }

    #[test]
    fn validate_rejects_sparse_ids_and_bad_capacity() {
        let mut t = Topology::smp(2);
        t.cpus[1].node_id = 2;
        t.node_distance = vec![vec![10; 3]; 3];
        assert_eq!(t.check().unwrap_err().field, "node_id");
        let mut t = Topology::smp(2);
        t.cpus[0].capacity = 2048;
        assert_eq!(t.check().unwrap_err().field, "capacity");
    }

    #[test]
    fn uniform_names_the_bad_parameter() {
        let bad = UniformShape { cores_per_llc: 0, ..shape(1, 1, 1, 4, 1, 0) };
        assert_eq!(Topology::uniform("x", bad).unwrap_err().field, "cores_per_llc");
        let far = shape(2, 1, 1, 2, 1, 5);
        assert_eq!(Topology::uniform("x", far).unwrap_err().field, "remote_distance");
        let huge = shape(64, 1, 1, 64, 2, 21);
        assert_eq!(Topology::uniform("x", huge).unwrap_err().field, "threads_per_core");
    }

    #[test]
    fn asymmetric_capacities_set_asym_flags() {
        let mut t = Topology::smp(4);
        t.cpus[2].capacity = 512;
        t.cpus[3].capacity = 512;
        let d = t.build_domains();
        let mc = &d.of(0)[0];
        assert_eq!(
            mc.flags & (SD_ASYM_CPUCAPACITY | SD_ASYM_CPUCAPACITY_FULL),
            SD_ASYM_CPUCAPACITY | SD_ASYM_CPUCAPACITY_FULL
        );
        assert!(d.sched_asym_cpucap_active() && t.asym_capacity());
        assert_eq!(d.sd_asym_cpucapacity(0), Some(mc));
    }

    #[test]
    fn costs_keys_match_fields() {
        let mut costs = Costs::x86_server();
        let keys: Vec<&str> = Costs::KEYS.iter().map(|(key, _)| *key).collect();
        let names: Vec<&str> = costs.values().iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, names);
        // jitter_pct is a percentage, so give every key a value valid for all: 1..=29.
        for (i, key) in keys.iter().enumerate() {
            costs.set(key, 1 + i as u64).unwrap();
        }
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(costs.get(key), Some(1 + i as u64));
        }
        assert!(costs.set("jitter_pct", 101).unwrap_err().contains("more than 100"));
        let error = costs.set("sycall_ns", 1).unwrap_err();
        assert!(error.contains("`sycall_ns`") && error.contains("syscall_ns"), "{error}");
        assert_eq!(costs.get("nope"), None);
    }

    #[test]
    fn large_smp_stays_compact() {
        let d = Topology::smp(1024).build_domains();
        assert_eq!(d.nr_domains(), 1024);
        assert_eq!(d.group_lists.len(), 1, "every CPU's groups are one rotated list");
        assert_eq!(d.groups(&d.of(1000)[0]).next(), Some(&[1000u32][..]));
    }
}
