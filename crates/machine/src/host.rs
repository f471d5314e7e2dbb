//! The machine the simulator runs on, read from sysfs: online CPUs, SMT siblings, clusters, the
//! highest cache level, packages, NUMA nodes and distances, CPU capacities and idle-state exit
//! latencies. The sysfs root is a parameter so tests can feed a fake tree.

use std::path::{Path, PathBuf};

use sim::topology::{Costs, CpuTopo, LOCAL_DISTANCE, MAX_CPUS, SCHED_CAPACITY_SCALE, Topology, parse_cpu_list};

use crate::error::MachineError;

/// The topology of this machine from `/sys` (and `/proc/cpuinfo`, for the hypervisor flag).
pub fn host_topology() -> Result<Topology, MachineError> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok();
    host_topology_with(Path::new("/sys"), cpuinfo.as_deref())
}

/// Why this machine is taken for a virtual machine's guest, if it is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmGuest {
    /// The signals found, e.g. `hypervisor flag in /proc/cpuinfo, cpuidle driver haltpoll`.
    pub signals: Vec<String>,
    /// `haltpoll.guest_halt_poll_ns` when the haltpoll driver is loaded: how long an idle vCPU
    /// polls before it halts (0: it halts at once).
    pub halt_poll_ns: Option<u64>,
}

/// Whether the machine under `root` (sysfs) with this `/proc/cpuinfo` text is a VM guest:
/// the `hypervisor` CPU flag (set by every x86 hypervisor), the `haltpoll` cpuidle driver
/// (registered only on KVM guests, `cpuidle-haltpoll.c`) or `/sys/hypervisor/type` (Xen).
pub fn vm_guest(root: &Path, cpuinfo: Option<&str>) -> Option<VmGuest> {
    let mut signals = Vec::new();
    if let Some(text) = cpuinfo
        && text.lines().any(|l| {
            l.split_once(':')
                .is_some_and(|(k, v)| k.trim() == "flags" && v.split_whitespace().any(|f| f == "hypervisor"))
        })
    {
        signals.push("hypervisor flag in /proc/cpuinfo".to_string());
    }
    let driver = std::fs::read_to_string(root.join("devices/system/cpu/cpuidle/current_driver")).unwrap_or_default();
    if driver.trim() == "haltpoll" {
        signals.push("cpuidle driver haltpoll".to_string());
    }
    if let Ok(kind) = std::fs::read_to_string(root.join("hypervisor/type")) {
        signals.push(format!("hypervisor type {}", kind.trim()));
    }
    let halt_poll_ns = std::fs::read_to_string(root.join("module/haltpoll/parameters/guest_halt_poll_ns"))
        .ok()
        .and_then(|v| v.trim().parse().ok());
    (!signals.is_empty()).then_some(VmGuest { signals, halt_poll_ns })
}

/// What a VM guest pays to wake a halted vCPU, until `schedlab calibrate` measures this
/// machine: the halt is a VM exit, and the wakeup an IPI the hypervisor delivers by waking the
/// vCPU's thread on the host and entering the guest again — tens of microseconds **[estimate]**
/// (the issue notes measured 20–40 µs on the development VM), against the 1 µs the guest's
/// cpuidle state claims. The IPI costs are those of the `vm-2cpu` preset (an ICR write traps
/// without IPI virtualisation).
pub const VM_HALTED_VCPU_WAKE_NS: u64 = 20_000;

/// The costs of a VM guest: every non-polling idle state is a halt, so both idle exits cost a
/// halted vCPU's wakeup. Returns the note for the topology's `source`.
fn apply_vm_guest(vm: &VmGuest, costs: &mut Costs) -> String {
    costs.idle_exit_ns_c1 = VM_HALTED_VCPU_WAKE_NS;
    costs.idle_exit_ns_deep = VM_HALTED_VCPU_WAKE_NS;
    costs.wakeup_remote_ipi_ns = 1_500;
    costs.ipi_receive_ns = 2_000;
    // The timer interrupt's expiry and re-arm both exit to the hypervisor (vm-2cpu's figure).
    costs.timer_irq_ns = 2_000;
    format!(
        "; VM guest ({}{}): waking a halted vCPU costs {} us [estimate; `schedlab calibrate` measures it]",
        vm.signals.join(", "),
        vm.halt_poll_ns.map_or(String::new(), |ns| format!(", guest_halt_poll_ns {ns}")),
        VM_HALTED_VCPU_WAKE_NS / 1_000
    )
}

/// The topology described by the sysfs tree under `root` (the directory holding `devices/`).
///
/// Offline CPUs are left out and the online ones are renumbered densely in increasing order, so
/// a machine with CPU 2 offline simulates CPUs 0..n-1 (the description says so). An LLC that
/// spans NUMA nodes is split at node boundaries, as Linux does. Without cache information the
/// LLC is taken to be the CPU's node (arm64's `cpu_coregroup_mask` falls back to the smaller of
/// node and package); without `devices/system/node` the machine has one node. Idle exit
/// latencies come from the first online CPU's `cpuidle` states when there are any; the other
/// costs are [`Costs::x86_server`].
pub fn host_topology_from(root: &Path) -> Result<Topology, MachineError> {
    host_topology_with(root, None)
}

/// [`host_topology_from`] with the text of `/proc/cpuinfo` too: on a VM guest
/// ([`vm_guest`]) the idle exits cost a halted vCPU's wakeup.
pub fn host_topology_with(root: &Path, cpuinfo: Option<&str>) -> Result<Topology, MachineError> {
    let cpu_dir = root.join("devices/system/cpu");
    let online = read_cpu_list(&cpu_dir.join("online"))?;
    if online.is_empty() || online.len() > MAX_CPUS as usize {
        return Err(MachineError::Sysfs {
            path: cpu_dir.join("online"),
            message: format!("{} online CPUs; the simulator needs 1..={MAX_CPUS}", online.len()),
        });
    }
    let nodes = read_nodes(&root.join("devices/system/node"), &online)?;
    let mut host = Vec::with_capacity(online.len());
    for &cpu in &online {
        host.push(read_cpu(&cpu_dir.join(format!("cpu{cpu}")), cpu, &online, &nodes)?);
    }
    let dense = |set: &[u32]| set.iter().filter_map(|cpu| online.binary_search(cpu).ok()).min();
    let mut ids = IdAllocator::default();
    let cpus = host
        .iter()
        .enumerate()
        .map(|(position, cpu)| {
            let first = |set: &[u32]| dense(set).unwrap_or(position) as u64;
            CpuTopo {
                cpu: position as u32,
                smt_id: ids.core.id(first(&cpu.siblings)),
                cluster_id: ids.cluster.id(first(&cpu.cluster)),
                llc_id: ids.llc.id(first(&cpu.llc)),
                package_id: ids.package.id(cpu.package),
                node_id: cpu.node,
                capacity: cpu.capacity,
            }
        })
        .collect();
    let renumbered = online.iter().enumerate().any(|(position, &cpu)| cpu != position as u32);
    let mut description = format!("{} online CPUs of this machine, read from {}", online.len(), root.display());
    if renumbered {
        let list = sim::topology::format_cpu_list(&online);
        description.push_str(&format!("; host CPUs {list} renumbered 0..{}", online.len() - 1));
    }
    let mut costs = Costs::x86_server();
    let mut idle_note = apply_idle_states(&cpu_dir.join(format!("cpu{}/cpuidle", online[0])), &mut costs)?;
    if let Some(vm) = vm_guest(root, cpuinfo) {
        idle_note += &apply_vm_guest(&vm, &mut costs);
    }
    let topology = Topology {
        name: "host".to_string(),
        description,
        source: format!(
            "sysfs under {}: devices/system/cpu/{{online, cpu*/topology, cpu*/cache/index*, \
             cpu*/cpu_capacity}}, devices/system/node/node*/{{cpulist, distance}}; costs: \
             workloads.md 10.2 x86 server defaults{idle_note}",
            root.display()
        ),
        cpus,
        node_distance: nodes.distance.clone(),
        costs,
    };
    topology.check().map_err(|error| MachineError::Invalid {
        origin: format!("host ({})", root.display()),
        line: None,
        field: error.field.to_string(),
        message: match error.cpu {
            Some(cpu) => format!("cpu {cpu} (host cpu {}): {}", online[cpu as usize], error.message),
            None => error.message,
        },
    })?;
    Ok(topology)
}

/// What sysfs says about one online CPU, in host CPU numbers.
struct HostCpu {
    siblings: Vec<u32>,
    cluster: Vec<u32>,
    llc: Vec<u32>,
    package: u64,
    node: u32,
    capacity: u32,
}

/// Dense ids handed out in order of first appearance, one counter per kind of id.
#[derive(Default)]
struct IdAllocator {
    core: Ids,
    cluster: Ids,
    llc: Ids,
    package: Ids,
}

#[derive(Default)]
struct Ids {
    seen: Vec<u64>,
}

impl Ids {
    fn id(&mut self, key: u64) -> u32 {
        match self.seen.iter().position(|&seen| seen == key) {
            Some(id) => id as u32,
            None => {
                self.seen.push(key);
                self.seen.len() as u32 - 1
            }
        }
    }
}

/// The online CPUs of each node with CPUs (nodes renumbered densely by increasing node number)
/// and the SLIT between those nodes.
struct Nodes {
    cpus: Vec<Vec<u32>>,
    distance: Vec<Vec<u32>>,
}

impl Nodes {
    fn of(&self, cpu: u32) -> Option<u32> {
        self.cpus.iter().position(|cpus| cpus.binary_search(&cpu).is_ok()).map(|node| node as u32)
    }
}

fn read_nodes(node_dir: &Path, online: &[u32]) -> Result<Nodes, MachineError> {
    if !node_dir.is_dir() {
        return Ok(Nodes { cpus: vec![online.to_vec()], distance: vec![vec![LOCAL_DISTANCE]] });
    }
    let mut numbers = numbered_entries(node_dir, "node")?;
    numbers.sort_unstable();
    // The `distance` rows list one column per online node, in increasing node order.
    let columns = match read_optional(&node_dir.join("online"))? {
        Some(text) => parse_list(&node_dir.join("online"), &text)?,
        None => numbers.clone(),
    };
    let mut kept = Vec::new();
    let mut cpus = Vec::new();
    for &node in &numbers {
        let path = node_dir.join(format!("node{node}/cpulist"));
        let list: Vec<u32> = read_cpu_list(&path)?.into_iter().filter(|c| online.binary_search(c).is_ok()).collect();
        if !list.is_empty() {
            kept.push(node);
            cpus.push(list);
        }
    }
    let mut distance = Vec::with_capacity(kept.len());
    for &node in &kept {
        let path = node_dir.join(format!("node{node}/distance"));
        let row = read_numbers(&path)?;
        let mut kept_row = Vec::with_capacity(kept.len());
        for &other in &kept {
            let column = columns.iter().position(|&c| c == other);
            match column.and_then(|column| row.get(column)) {
                Some(&value) => kept_row.push(value),
                None => {
                    return Err(MachineError::Sysfs {
                        path,
                        message: format!("no distance to node {other} (columns are nodes {columns:?})"),
                    });
                }
            }
        }
        distance.push(kept_row);
    }
    if cpus.is_empty() {
        return Ok(Nodes { cpus: vec![online.to_vec()], distance: vec![vec![LOCAL_DISTANCE]] });
    }
    Ok(Nodes { cpus, distance })
}

fn read_cpu(dir: &Path, cpu: u32, online: &[u32], nodes: &Nodes) -> Result<HostCpu, MachineError> {
    let topology = dir.join("topology");
    let only_online = |set: Vec<u32>| -> Vec<u32> {
        let set: Vec<u32> = set.into_iter().filter(|c| online.binary_search(c).is_ok()).collect();
        if set.contains(&cpu) { set } else { vec![cpu] }
    };
    let siblings = only_online(read_cpu_list(&topology.join("thread_siblings_list"))?);
    let cluster = match read_optional(&topology.join("cluster_cpus_list"))? {
        Some(text) => only_online(parse_list(&topology.join("cluster_cpus_list"), &text)?),
        None => siblings.clone(),
    };
    let package_text = read_required(&topology.join("physical_package_id"))?;
    // Some arm64 firmware reports -1; all such CPUs then form one package.
    let package = package_text.trim().parse::<i64>().map_err(|_| MachineError::Sysfs {
        path: topology.join("physical_package_id"),
        message: format!("expected a package number, found `{}`", package_text.trim()),
    })?;
    let node = nodes.of(cpu).ok_or_else(|| MachineError::Sysfs {
        path: dir.to_path_buf(),
        message: format!("cpu {cpu} is online but in no node's cpulist"),
    })?;
    let node_cpus = &nodes.cpus[node as usize];
    let llc = match read_llc(&dir.join("cache"))? {
        Some(set) => only_online(set),
        None => Vec::new(),
    };
    let llc: Vec<u32> = if llc.is_empty() {
        node_cpus.clone()
    } else {
        llc.into_iter().filter(|c| node_cpus.binary_search(c).is_ok()).collect()
    };
    let capacity = match read_optional(&dir.join("cpu_capacity"))? {
        Some(text) => parse_number(&dir.join("cpu_capacity"), &text)?,
        None => SCHED_CAPACITY_SCALE,
    };
    // Only equality matters for the key, so -1 may wrap.
    Ok(HostCpu { siblings, cluster, llc, package: package as u64, node, capacity })
}

/// The `shared_cpu_list` of the highest-level data or unified cache, or `None` without cache
/// information.
fn read_llc(cache_dir: &Path) -> Result<Option<Vec<u32>>, MachineError> {
    if !cache_dir.is_dir() {
        return Ok(None);
    }
    let mut indices = numbered_entries(cache_dir, "index")?;
    indices.sort_unstable();
    let mut best: Option<(u32, Vec<u32>)> = None;
    for index in indices {
        let dir = cache_dir.join(format!("index{index}"));
        let kind = read_optional(&dir.join("type"))?.unwrap_or_default();
        if kind.trim() == "Instruction" {
            continue;
        }
        let level: u32 = parse_number(&dir.join("level"), &read_required(&dir.join("level"))?)?;
        if best.as_ref().is_none_or(|(best_level, _)| level > *best_level) {
            best = Some((level, read_cpu_list(&dir.join("shared_cpu_list"))?));
        }
    }
    Ok(best.map(|(_, cpus)| cpus))
}

/// Shallow and deep idle exit latencies from `cpuidle/state*/{name,latency,residency}` (in µs);
/// the polling state is skipped. Returns a note for the `source` text.
fn apply_idle_states(cpuidle: &Path, costs: &mut Costs) -> Result<String, MachineError> {
    if !cpuidle.is_dir() {
        return Ok(String::new());
    }
    let mut states = numbered_entries(cpuidle, "state")?;
    states.sort_unstable();
    let mut found = Vec::new();
    for state in states {
        let dir = cpuidle.join(format!("state{state}"));
        let name = read_optional(&dir.join("name"))?.unwrap_or_default();
        if name.trim() == "POLL" {
            continue;
        }
        let latency_us: u64 = parse_number(&dir.join("latency"), &read_required(&dir.join("latency"))?)?;
        let residency_us: u64 = parse_number(&dir.join("residency"), &read_required(&dir.join("residency"))?)?;
        found.push((name.trim().to_string(), latency_us, residency_us));
    }
    // A haltpoll guest polls up to guest_halt_poll_ns (0 on this workplace's VMs: never); a
    // machine whose cpuidle offers a POLL state polls below CPUIDLE_POLL_MIN (10 us); one
    // without it never polls.
    let has_poll = numbered_entries(cpuidle, "state")?.iter().any(|n| {
        std::fs::read_to_string(cpuidle.join(format!("state{n}/name"))).is_ok_and(|name| name.trim() == "POLL")
    });
    let haltpoll_ns = cpuidle
        .ancestors()
        .nth(5) // <root>/devices/system/cpu/cpuN/cpuidle
        .map(|root| root.join("module/haltpoll/parameters/guest_halt_poll_ns"))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    costs.idle_poll_ns = match (haltpoll_ns, has_poll) {
        (Some(ns), _) => ns,
        (None, true) => 10_000,
        (None, false) => 0,
    };
    let (Some(shallow), Some(deep)) = (found.first(), found.last()) else {
        return Ok(String::new());
    };
    costs.idle_exit_ns_c1 = shallow.1 * 1_000;
    costs.idle_exit_ns_deep = deep.1 * 1_000;
    costs.idle_deep_residency_ns = deep.2 * 1_000;
    let deepest = format!("{} {} us, residency {} us", deep.0, deep.1, deep.2);
    Ok(match found.len() {
        1 => format!(", idle exit from cpuidle ({deepest})"),
        _ => format!(", idle exit from cpuidle ({} {} us; {deepest})", shallow.0, shallow.1),
    })
}

/// The numbers `N` of the entries `<prefix>N` of a directory.
fn numbered_entries(dir: &Path, prefix: &str) -> Result<Vec<u32>, MachineError> {
    let entries = std::fs::read_dir(dir).map_err(|error| MachineError::Read { path: dir.to_path_buf(), error })?;
    let mut numbers = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| MachineError::Read { path: dir.to_path_buf(), error })?;
        let name = entry.file_name();
        let number = name.to_str().and_then(|name| name.strip_prefix(prefix)).and_then(|n| n.parse::<u32>().ok());
        numbers.extend(number);
    }
    Ok(numbers)
}

fn read_required(path: &Path) -> Result<String, MachineError> {
    std::fs::read_to_string(path).map_err(|error| MachineError::Read { path: path.to_path_buf(), error })
}

fn read_optional(path: &Path) -> Result<Option<String>, MachineError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(MachineError::Read { path: path.to_path_buf(), error }),
    }
}

fn read_cpu_list(path: &Path) -> Result<Vec<u32>, MachineError> {
    parse_list(path, &read_required(path)?)
}

fn parse_list(path: &Path, text: &str) -> Result<Vec<u32>, MachineError> {
    parse_cpu_list(text).map_err(|message| MachineError::Sysfs { path: PathBuf::from(path), message })
}

fn read_numbers(path: &Path) -> Result<Vec<u32>, MachineError> {
    let text = read_required(path)?;
    text.split_whitespace().map(|word| parse_number(path, word)).collect()
}

fn parse_number<T: std::str::FromStr>(path: &Path, text: &str) -> Result<T, MachineError> {
    text.trim().parse().map_err(|_| MachineError::Sysfs {
        path: path.to_path_buf(),
        message: format!("expected a number, found `{}`", text.trim()),
    })
}
