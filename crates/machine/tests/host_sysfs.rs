//! The host reader against fake sysfs trees, and a smoke test against the real `/sys`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::{Path, PathBuf};

use machine::{MachineError, VM_HALTED_VCPU_WAKE_NS, host_topology, host_topology_from, host_topology_with, vm_guest};

/// A scratch sysfs tree under the system temp dir, removed when dropped.
struct FakeSysfs {
    root: PathBuf,
}

impl FakeSysfs {
    fn new(name: &str) -> FakeSysfs {
        let root = std::env::temp_dir().join(format!("machine-test-sysfs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        FakeSysfs { root }
    }

    fn write(&self, relative: &str, content: &str) -> &FakeSysfs {
        let path = self.root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{content}\n")).unwrap();
        self
    }

    /// One CPU's topology and cache files; `llc` is the shared_cpu_list of its L3.
    fn cpu(&self, cpu: u32, package: u32, siblings: &str, llc: Option<&str>) -> &FakeSysfs {
        let dir = format!("devices/system/cpu/cpu{cpu}");
        self.write(&format!("{dir}/topology/physical_package_id"), &package.to_string());
        self.write(&format!("{dir}/topology/thread_siblings_list"), siblings);
        self.write(&format!("{dir}/topology/core_id"), "0");
        if let Some(llc) = llc {
            self.write(&format!("{dir}/cache/index0/level"), "1");
            self.write(&format!("{dir}/cache/index0/type"), "Data");
            self.write(&format!("{dir}/cache/index0/shared_cpu_list"), &cpu.to_string());
            self.write(&format!("{dir}/cache/index1/level"), "1");
            self.write(&format!("{dir}/cache/index1/type"), "Instruction");
            self.write(&format!("{dir}/cache/index1/shared_cpu_list"), &cpu.to_string());
            self.write(&format!("{dir}/cache/index3/level"), "3");
            self.write(&format!("{dir}/cache/index3/type"), "Unified");
            self.write(&format!("{dir}/cache/index3/shared_cpu_list"), llc);
        }
        self
    }

    fn path(&self) -> &Path {
        &self.root
    }
}

impl Drop for FakeSysfs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn two_socket_smt_machine_with_an_offline_cpu() {
    // Host CPUs 0-7: package 0 has cores {0,4} {1,5}, package 1 has {2,6} {3,7}; CPU 6 is
    // offline, so host 7 becomes CPU 6.
    let sys = FakeSysfs::new("two-socket");
    sys.write("devices/system/cpu/online", "0-5,7");
    for (cpu, package, siblings) in
        [(0, 0, "0,4"), (1, 0, "1,5"), (2, 1, "2,6"), (3, 1, "3,7"), (4, 0, "0,4"), (5, 0, "1,5"), (7, 1, "3,7")]
    {
        let llc = if package == 0 { "0-1,4-5" } else { "2-3,6-7" };
        sys.cpu(cpu, package, siblings, Some(llc));
    }
    sys.write("devices/system/node/online", "0-1")
        .write("devices/system/node/node0/cpulist", "0-1,4-5")
        .write("devices/system/node/node1/cpulist", "2-3,6-7")
        .write("devices/system/node/node0/distance", "10 21")
        .write("devices/system/node/node1/distance", "21 10")
        .write("devices/system/cpu/cpu0/cpuidle/state0/name", "POLL")
        .write("devices/system/cpu/cpu0/cpuidle/state0/latency", "0")
        .write("devices/system/cpu/cpu0/cpuidle/state0/residency", "0")
        .write("devices/system/cpu/cpu0/cpuidle/state1/name", "C1")
        .write("devices/system/cpu/cpu0/cpuidle/state1/latency", "2")
        .write("devices/system/cpu/cpu0/cpuidle/state1/residency", "2")
        .write("devices/system/cpu/cpu0/cpuidle/state2/name", "C6")
        .write("devices/system/cpu/cpu0/cpuidle/state2/latency", "133")
        .write("devices/system/cpu/cpu0/cpuidle/state2/residency", "600");

    let topology = host_topology_from(sys.path()).unwrap();
    assert_eq!(topology.name, "host");
    assert_eq!((topology.nr_cpus(), topology.nr_packages(), topology.nr_nodes(), topology.nr_llcs()), (7, 2, 2, 2));
    assert_eq!(topology.node_distance, [[10, 21], [21, 10]]);
    assert_eq!(topology.smt_siblings(0), [0, 4]);
    assert_eq!(topology.smt_siblings(3), [3, 6], "host 7 is renumbered 6");
    assert_eq!(topology.smt_siblings(2), [2], "host 6 is offline");
    assert_eq!(topology.llc_cpus(6), [2, 3, 6]);
    assert!(topology.description.contains("host CPUs 0-5,7 renumbered 0..6"), "{}", topology.description);
    assert_eq!(topology.costs.idle_exit_ns_c1, 2_000);
    assert_eq!((topology.costs.idle_exit_ns_deep, topology.costs.idle_deep_residency_ns), (133_000, 600_000));
    let domains = topology.build_domains();
    assert_eq!(domains.of(0).len(), 3, "SMT, MC, NUMA");
}

/// The development VM's tree: 2 vCPUs, cpuidle states POLL and haltpoll (1 us), the haltpoll
/// driver with guest_halt_poll_ns 0, and the hypervisor flag.
fn kvm_guest(sys: &FakeSysfs, halt_poll_ns: &str) {
    sys.write("devices/system/cpu/online", "0-1");
    sys.cpu(0, 0, "0", Some("0-1"));
    sys.cpu(1, 0, "1", Some("0-1"));
    sys.write("devices/system/cpu/cpu0/cpuidle/state0/name", "POLL")
        .write("devices/system/cpu/cpu0/cpuidle/state0/latency", "0")
        .write("devices/system/cpu/cpu0/cpuidle/state0/residency", "0")
        .write("devices/system/cpu/cpu0/cpuidle/state1/name", "haltpoll idle")
        .write("devices/system/cpu/cpu0/cpuidle/state1/latency", "1")
        .write("devices/system/cpu/cpu0/cpuidle/state1/residency", "1")
        .write("devices/system/cpu/cpuidle/current_driver", "haltpoll")
        .write("module/haltpoll/parameters/guest_halt_poll_ns", halt_poll_ns);
}

const CPUINFO_KVM: &str =
    "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu vme de pse tsc msr hypervisor lahf_lm\n\n";
const CPUINFO_METAL: &str = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr lahf_lm\n";

#[test]
fn a_kvm_guest_pays_for_waking_a_halted_vcpu() {
    let sys = FakeSysfs::new("kvm");
    kvm_guest(&sys, "0");
    let vm = vm_guest(sys.path(), Some(CPUINFO_KVM)).unwrap();
    assert_eq!(vm.signals, ["hypervisor flag in /proc/cpuinfo", "cpuidle driver haltpoll"]);
    assert_eq!(vm.halt_poll_ns, Some(0));
    let t = host_topology_with(sys.path(), Some(CPUINFO_KVM)).unwrap();
    // cpuidle claims 1 us; a halted vCPU is woken through the host.
    assert_eq!(t.costs.idle_exit_ns_c1, VM_HALTED_VCPU_WAKE_NS);
    assert_eq!(t.costs.idle_exit_ns_deep, VM_HALTED_VCPU_WAKE_NS);
    assert_eq!(t.costs.idle_poll_ns, 0, "guest_halt_poll_ns 0: it never polls");
    assert!(t.source.contains("VM guest") && t.source.contains("guest_halt_poll_ns 0"), "{}", t.source);
    // The haltpoll driver alone says KVM guest too; a guest that polls keeps its polling window.
    let sys2 = FakeSysfs::new("kvm-poll");
    kvm_guest(&sys2, "200000");
    let t = host_topology_from(sys2.path()).unwrap();
    assert_eq!((t.costs.idle_exit_ns_c1, t.costs.idle_poll_ns), (VM_HALTED_VCPU_WAKE_NS, 200_000));
}

#[test]
fn bare_metal_keeps_its_cpuidle_exit_latencies() {
    let sys = FakeSysfs::new("metal");
    sys.write("devices/system/cpu/online", "0-1");
    sys.cpu(0, 0, "0", Some("0-1"));
    sys.cpu(1, 0, "1", Some("0-1"));
    sys.write("devices/system/cpu/cpu0/cpuidle/state0/name", "C1")
        .write("devices/system/cpu/cpu0/cpuidle/state0/latency", "2")
        .write("devices/system/cpu/cpu0/cpuidle/state0/residency", "2")
        .write("devices/system/cpu/cpuidle/current_driver", "intel_idle");
    assert!(vm_guest(sys.path(), Some(CPUINFO_METAL)).is_none());
    let t = host_topology_with(sys.path(), Some(CPUINFO_METAL)).unwrap();
    assert_eq!(t.costs.idle_exit_ns_c1, 2_000);
    assert!(!t.source.contains("VM guest"));
}

#[test]
fn minimal_tree_without_caches_or_nodes() {
    let sys = FakeSysfs::new("minimal");
    sys.write("devices/system/cpu/online", "0-3");
    for cpu in 0..4 {
        sys.cpu(cpu, 0, &cpu.to_string(), None);
        sys.write(
            &format!("devices/system/cpu/cpu{cpu}/topology/cluster_cpus_list"),
            if cpu < 2 { "0-1" } else { "2-3" },
        );
    }
    sys.write("devices/system/cpu/cpu3/cpu_capacity", "512");
    sys.write("devices/system/cpu/cpu2/cpu_capacity", "512");
    let topology = host_topology_from(sys.path()).unwrap();
    assert_eq!((topology.nr_cpus(), topology.nr_nodes(), topology.nr_llcs(), topology.nr_clusters()), (4, 1, 1, 2));
    assert!(topology.asym_capacity());
    let domains = topology.build_domains();
    assert!(domains.sched_cluster_active());
    assert!(domains.sched_asym_cpucap_active());
}

#[test]
fn bad_sysfs_content_names_the_file() {
    let sys = FakeSysfs::new("bad");
    sys.write("devices/system/cpu/online", "0-1");
    sys.cpu(0, 0, "0", Some("0-1"));
    sys.cpu(1, 0, "1", Some("0-1"));
    sys.write("devices/system/cpu/cpu1/topology/physical_package_id", "socket");
    let error = host_topology_from(sys.path()).unwrap_err();
    assert!(matches!(error, MachineError::Sysfs { .. }));
    let message = error.to_string();
    assert!(message.contains("cpu1/topology/physical_package_id") && message.contains("`socket`"), "{message}");

    let missing = FakeSysfs::new("missing");
    let message = host_topology_from(missing.path()).unwrap_err().to_string();
    assert!(message.contains("devices/system/cpu/online"), "{message}");
}

#[test]
fn impossible_host_layout_names_the_field() {
    // SMT siblings that claim different L3s.
    let sys = FakeSysfs::new("impossible");
    sys.write("devices/system/cpu/online", "0-1");
    sys.cpu(0, 0, "0-1", Some("0"));
    sys.cpu(1, 0, "0-1", Some("1"));
    let message = host_topology_from(sys.path()).unwrap_err().to_string();
    assert!(message.contains("field `llc_id`") && message.contains("host cpu 1"), "{message}");
}

#[test]
fn the_real_host_is_readable() {
    if !Path::new("/sys/devices/system/cpu/online").exists() {
        return;
    }
    let topology = host_topology().unwrap();
    assert!(topology.nr_cpus() >= 1);
    topology.validate().unwrap();
}
