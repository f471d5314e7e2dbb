//! The guest's CPUs from a schedlab topology: `smp:N`, a preset (`schedlab topology list`) or a
//! topology file, booted as qemu's `-smp sockets=,dies=,cores=,threads=` and one `-numa node`
//! per NUMA node (with the preset's SLIT as `-numa dist`), and the check that the booted
//! kernel built the sched domains and LLCs `schedlab topology show` gives for it.
//!
//! qemu numbers its x86 vCPUs socket by socket, die by die, core by core, the threads of a core
//! consecutively, and Linux enumerates them in that order (the MADT lists them by CPU index). A
//! preset may number its CPUs otherwise (desktop-8c16t's core `c` holds CPUs `c` and `c+8`, as
//! Linux enumerates AMD desktop parts), so the guest's CPU `i` is the preset's CPU at the same
//! (package, LLC, core, thread) position, [`GuestTopology::model_cpu`], and the check compares
//! spans in the preset's numbering.
//!
//! What an x86 qemu 7.2 guest cannot be given is refused before any boot: clusters (no x86
//! `clusters=` in qemu 7.2), asymmetric CPU capacities, irregular shapes (every package the
//! same number of nodes, every node of whole LLCs, every LLC the same number of cores, every
//! core the same number of threads), more than [`MAX_VCPUS`] CPUs.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use sim::topology::Topology;

use crate::VmError;
use crate::console::Console;

/// More vCPUs than this would crawl under TCG on a small host and are refused.
pub const MAX_VCPUS: u32 = 64;

/// Memory per NUMA node, MiB (a single-node guest has [`crate::qemu::GUEST_MIB`]).
const NODE_MIB: u32 = 256;

/// A topology a guest can boot.
#[derive(Clone, Debug)]
pub struct GuestTopology {
    /// As given: `smp:2`, a preset name or a file path (the results store's topology).
    pub name: String,
    pub topology: Topology,
    pub sockets: u32,
    /// LLCs per socket: qemu's dies (its x86 L3 is shared by a die).
    pub dies: u32,
    /// Cores per die.
    pub cores: u32,
    pub threads: u32,
    /// NUMA nodes, each of whole dies in guest CPU order; 1: no `-numa`.
    pub nodes: u32,
    /// `model_cpu[i]`: the preset's CPU that the guest's CPU `i` is.
    model_cpu: Vec<u32>,
    /// `node_of_guest_node[k]`: the preset's node id of guest node `k`.
    model_node: Vec<u32>,
}

fn refuse(spec: &str, why: impl std::fmt::Display) -> VmError {
    VmError::Usage(format!("--topology {spec}: {why}"))
}

/// The distinct values of `f` over `cpus`, ascending.
fn distinct(cpus: &[&sim::topology::CpuTopo], f: impl Fn(&sim::topology::CpuTopo) -> u32) -> Vec<u32> {
    cpus.iter().map(|c| f(c)).collect::<BTreeSet<_>>().into_iter().collect()
}

/// Parses `--topology` for a guest: `smp:N` or anything `schedlab topology show` takes.
pub fn parse(spec: &str) -> Result<GuestTopology, VmError> {
    let topology = machine::resolve_topology(spec).map_err(|e| refuse(spec, e))?;
    from_topology(spec, topology)
}

/// The guest shape of `topology` (named `spec`), or why qemu cannot boot it.
pub fn from_topology(spec: &str, topology: Topology) -> Result<GuestTopology, VmError> {
    let n = topology.cpus.len() as u32;
    if n == 0 || n > MAX_VCPUS {
        return Err(refuse(spec, format!("{n} CPUs; a TCG guest boots 1..={MAX_VCPUS}")));
    }
    if topology.cpus.iter().any(|c| c.capacity != topology.cpus[0].capacity) {
        return Err(refuse(spec, "asymmetric CPU capacities cannot be given to an x86 guest"));
    }
    let all: Vec<&sim::topology::CpuTopo> = topology.cpus.iter().collect();
    let mut model_cpu = Vec::with_capacity(n as usize);
    let mut model_node = Vec::new();
    let (mut dies, mut cores, mut threads, mut nodes_per_pkg, mut llcs_per_node) = (None, None, None, None, None);
    let same = |slot: &mut Option<u32>, v: u32, what: &str| -> Result<(), VmError> {
        match *slot {
            Some(w) if w != v => Err(refuse(spec, format!("not a regular machine ({what}: {w} and {v})"))),
            _ => {
                *slot = Some(v);
                Ok(())
            }
        }
    };
    let packages = distinct(&all, |c| c.package_id);
    for &p in &packages {
        let in_pkg: Vec<_> = all.iter().copied().filter(|c| c.package_id == p).collect();
        let nodes = distinct(&in_pkg, |c| c.node_id);
        same(&mut nodes_per_pkg, nodes.len() as u32, "NUMA nodes per package")?;
        let mut pkg_dies = 0;
        for &nd in &nodes {
            if all.iter().any(|c| c.node_id == nd && c.package_id != p) {
                return Err(refuse(spec, format!("node {nd} spans packages")));
            }
            model_node.push(nd);
            let in_node: Vec<_> = in_pkg.iter().copied().filter(|c| c.node_id == nd).collect();
            let llcs = distinct(&in_node, |c| c.llc_id);
            same(&mut llcs_per_node, llcs.len() as u32, "LLCs per NUMA node")?;
            for &l in &llcs {
                if all.iter().any(|c| c.llc_id == l && c.node_id != nd) {
                    return Err(refuse(spec, format!("LLC {l} spans NUMA nodes")));
                }
                pkg_dies += 1;
                let in_llc: Vec<_> = in_node.iter().copied().filter(|c| c.llc_id == l).collect();
                let llc_cores = distinct(&in_llc, |c| c.smt_id);
                same(&mut cores, llc_cores.len() as u32, "cores per LLC")?;
                let clusters = distinct(&in_llc, |c| c.cluster_id);
                if clusters.len() != 1 && clusters.len() != llc_cores.len() {
                    return Err(refuse(
                        spec,
                        "clusters (a CLS level) cannot be given to an x86 guest (qemu 7.2 has no x86 clusters=)",
                    ));
                }
                for &core in &llc_cores {
                    let sibs: Vec<u32> = in_llc.iter().filter(|c| c.smt_id == core).map(|c| c.cpu).collect();
                    same(&mut threads, sibs.len() as u32, "threads per core")?;
                    model_cpu.extend(sibs);
                }
            }
        }
        same(&mut dies, pkg_dies, "LLCs per package")?;
    }
    let nodes_per_pkg = nodes_per_pkg.unwrap_or(1);
    let dies = dies.unwrap_or(1);
    Ok(GuestTopology {
        name: spec.to_string(),
        sockets: packages.len() as u32,
        dies,
        cores: cores.unwrap_or(1),
        threads: threads.unwrap_or(1),
        nodes: packages.len() as u32 * nodes_per_pkg,
        model_cpu,
        model_node,
        topology,
    })
}

impl GuestTopology {
    pub fn nr_cpus(&self) -> u32 {
        self.model_cpu.len() as u32
    }

    /// The preset's CPU that guest CPU `i` is.
    pub fn model_cpu(&self, i: u32) -> Option<u32> {
        self.model_cpu.get(i as usize).copied()
    }

    /// Guest memory, MiB: [`crate::qemu::GUEST_MIB`], or [`NODE_MIB`] per node.
    pub fn memory_mib(&self) -> u32 {
        if self.nodes > 1 { NODE_MIB * self.nodes } else { crate::qemu::GUEST_MIB }
    }

    /// qemu's `-smp` and `-numa` arguments (`-m` follows [`GuestTopology::memory_mib`]).
    pub fn qemu_args(&self) -> Vec<String> {
        let mut a = vec![
            "-smp".to_string(),
            format!(
                "{},sockets={},dies={},cores={},threads={}",
                self.nr_cpus(),
                self.sockets,
                self.dies,
                self.cores,
                self.threads
            ),
        ];
        if self.nodes > 1 {
            let per_node = self.nr_cpus() / self.nodes;
            for k in 0..self.nodes {
                a.push("-object".into());
                a.push(format!("memory-backend-ram,id=mem{k},size={NODE_MIB}M"));
                a.push("-numa".into());
                a.push(format!("node,nodeid={k},cpus={}-{},memdev=mem{k}", k * per_node, (k + 1) * per_node - 1));
            }
            let nd = |k: u32| self.model_node[k as usize] as usize;
            for src in 0..self.nodes {
                for dst in 0..self.nodes {
                    if src != dst {
                        let val = self.topology.node_distance.get(nd(src)).and_then(|r| r.get(nd(dst))).copied();
                        if let Some(val) = val {
                            a.push("-numa".into());
                            a.push(format!("dist,src={src},dst={dst},val={val}"));
                        }
                    }
                }
            }
        }
        a
    }

    /// Whether guest and preset number their CPUs alike.
    pub fn same_numbering(&self) -> bool {
        self.model_cpu.iter().enumerate().all(|(i, &m)| i as u32 == m)
    }

    /// `guest list` in the preset's numbering, ascending.
    fn to_model(&self, guest: &[u32]) -> Vec<u32> {
        let mut v: Vec<u32> = guest.iter().filter_map(|&g| self.model_cpu(g)).collect();
        v.sort_unstable();
        v
    }
}

/// A Linux CPU list (`0-3,8`).
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = vec![];
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// A `/proc/schedstat` cpumask (hex, 32-bit groups separated by commas, most significant first).
pub fn parse_cpumask(s: &str) -> Option<Vec<u32>> {
    let mut out = vec![];
    for (i, word) in s.split(',').rev().enumerate() {
        let w = u32::from_str_radix(word, 16).ok()?;
        out.extend((0..32).filter(|b| w >> b & 1 == 1).map(|b| i as u32 * 32 + b));
    }
    out.sort_unstable();
    Some(out)
}

/// One CPU's sched domains, lowest first: (name, span).
pub type CpuDomains = Vec<(String, Vec<u32>)>;

/// What the guest's kernel built, per guest CPU: its domains (names from
/// `/sys/kernel/debug/sched/domains`, spans from `/proc/schedstat`) and its LLC
/// (`cache/index3/shared_cpu_list`).
#[derive(Debug, Default, PartialEq)]
pub struct GuestDomains {
    pub domains: Vec<(u32, CpuDomains)>,
    pub llc: Vec<(u32, Vec<u32>)>,
}

/// The guest's domains as the agent reported them; `None` when it reported none.
pub fn guest_domains(c: &Console) -> Option<GuestDomains> {
    if c.domain_spans.is_empty() {
        return None;
    }
    let mut cpus: Vec<u32> = c.domain_spans.iter().map(|d| d.0).collect();
    cpus.dedup();
    let mut g = GuestDomains::default();
    for cpu in cpus {
        let mut doms: Vec<(u32, String, Vec<u32>)> = c
            .domain_spans
            .iter()
            .filter(|d| d.0 == cpu)
            .map(|d| {
                let name = c.domain_names.iter().find(|n| n.0 == cpu && n.1 == d.1).map_or("?", |n| n.2.as_str());
                (d.1, name.to_string(), d.2.clone())
            })
            .collect();
        doms.sort_by_key(|d| d.0);
        g.domains.push((cpu, doms.into_iter().map(|d| (d.1, d.2)).collect()));
    }
    g.llc = c.llc.clone();
    Some(g)
}

fn list(cpus: &[u32]) -> String {
    sim::topology::format_cpu_list(cpus)
}

/// The check: the guest's domains and LLCs against the preset's (`Topology::build_domains`, the
/// rules `schedlab topology show` prints), in the preset's CPU numbering. Returns whether they
/// agree and the report's lines.
pub fn check(t: &GuestTopology, g: &GuestDomains) -> (bool, Vec<String>) {
    let model = t.topology.build_domains();
    let mut lines = vec![];
    let mut bad = vec![];
    let mut seen = 0;
    for (cpu, doms) in &g.domains {
        let Some(m) = t.model_cpu(*cpu) else {
            bad.push(format!("guest CPU {cpu} is not in {}", t.name));
            continue;
        };
        seen += 1;
        let guest: Vec<String> = doms.iter().map(|(n, s)| format!("{n} {}", list(&t.to_model(s)))).collect();
        let want: Vec<String> = model.of(m).iter().map(|sd| format!("{} {}", sd.level, list(model.span(sd)))).collect();
        if guest != want {
            bad.push(format!(
                "CPU {m}{}: guest {} / model {}",
                if t.same_numbering() { String::new() } else { format!(" (guest CPU {cpu})") },
                if guest.is_empty() { "none".into() } else { guest.join(", ") },
                if want.is_empty() { "none".into() } else { want.join(", ") }
            ));
        }
        if let Some((_, llc)) = g.llc.iter().find(|l| l.0 == *cpu) {
            let want: Vec<u32> = t
                .topology
                .cpus
                .iter()
                .filter(|c| c.llc_id == t.topology.cpus[m as usize].llc_id)
                .map(|c| c.cpu)
                .collect();
            let got = t.to_model(llc);
            if got != want {
                bad.push(format!("CPU {m}: guest LLC {} / model LLC {}", list(&got), list(&want)));
            }
        }
    }
    if seen < t.nr_cpus() {
        bad.push(format!("the guest reported sched domains for {seen} of {} CPUs", t.nr_cpus()));
    }
    let cpu0 = g.domains.first().map(|(c, d)| {
        let doms: Vec<String> = d.iter().map(|(n, s)| format!("{n} {}", list(&t.to_model(s)))).collect();
        let llc = g.llc.iter().find(|l| l.0 == *c).map_or("not reported".into(), |l| list(&t.to_model(&l.1)));
        format!("CPU {}: {}; LLC {llc}", t.model_cpu(*c).unwrap_or(*c), doms.join(", "))
    });
    if bad.is_empty() {
        lines.push(format!(
            "guest sched domains and LLCs agree with `schedlab topology show {}` on all {} CPUs ({})",
            t.name,
            t.nr_cpus(),
            cpu0.unwrap_or_default()
        ));
    } else {
        lines.push(format!(
            "MISMATCH: the guest's sched domains or LLCs differ from `schedlab topology show {}` on {} point(s) \
             (the model's answer is for the preset, the guest's for what the kernel built):",
            t.name,
            bad.len()
        ));
        for b in bad.iter().take(8) {
            lines.push(format!("  {b}"));
        }
        if bad.len() > 8 {
            lines.push(format!("  ... {} more", bad.len() - 8));
        }
    }
    if g.llc.is_empty() {
        lines.push(
            "the guest kernel reports no L3 for its vCPUs (no cache/index3/shared_cpu_list): its LLC is what \
             its MC domain spans"
                .to_string(),
        );
    }
    if !t.same_numbering() {
        let mut s = String::from("guest CPU -> preset CPU (qemu numbers the threads of a core consecutively):");
        for (i, m) in t.model_cpu.iter().enumerate().take(16) {
            let _ = write!(s, " {i}->{m}");
        }
        if t.model_cpu.len() > 16 {
            s += " ...";
        }
        lines.push(s);
    }
    (bad.is_empty(), lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_become_qemu_shapes() {
        let t = parse("smp:2").unwrap();
        assert_eq!((t.sockets, t.dies, t.cores, t.threads, t.nodes), (1, 1, 2, 1, 1));
        assert_eq!(t.qemu_args(), ["-smp", "2,sockets=1,dies=1,cores=2,threads=1"]);
        assert!(t.same_numbering());
        // desktop-8c16t: one socket, one L3, 8 cores x 2 threads, siblings c and c+8.
        let d = parse("desktop-8c16t").unwrap();
        assert_eq!((d.sockets, d.dies, d.cores, d.threads, d.nodes), (1, 1, 8, 2, 1));
        assert_eq!((d.model_cpu(0), d.model_cpu(1), d.model_cpu(2)), (Some(0), Some(8), Some(1)));
        assert!(!d.same_numbering());
    }

    #[test]
    fn numa_nodes_get_memory_and_distances() {
        let mut t = Topology::uniform(
            "2s",
            sim::topology::UniformShape {
                packages: 2,
                nodes_per_package: 1,
                llcs_per_node: 1,
                cores_per_llc: 2,
                threads_per_core: 1,
                remote_distance: 21,
            },
        )
        .unwrap();
        t.name = "2s".into();
        // CPU 3 in an LLC of its own: node 1 has two LLCs, node 0 one.
        let mut odd = t.clone();
        odd.cpus[3].llc_id = 7;
        let e = from_topology("odd.toml", odd).unwrap_err().to_string();
        assert!(e.starts_with("--topology odd.toml: not a regular machine"), "{e}");
        let g = from_topology("2s.toml", t).unwrap();
        assert_eq!((g.sockets, g.dies, g.cores, g.threads, g.nodes), (2, 1, 2, 1, 2));
        let a = g.qemu_args().join(" ");
        assert!(
            a.starts_with("-smp 4,sockets=2,dies=1,cores=2,threads=1 -object memory-backend-ram,id=mem0,size=256M"),
            "{a}"
        );
        assert!(
            a.contains("-numa node,nodeid=1,cpus=2-3,memdev=mem1") && a.contains("-numa dist,src=1,dst=0,val=21"),
            "{a}"
        );
        assert_eq!(g.memory_mib(), 512);
    }

    #[test]
    fn what_qemu_cannot_boot_is_refused() {
        for (spec, why) in [("arm64-128", "CPUs"), ("ampere-altra-80", "CPUs"), ("smp:65", "")] {
            let e = parse(spec).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--topology {spec}:")) && e.contains(why), "{e}");
        }
    }

    #[test]
    fn masks_and_lists_parse() {
        assert_eq!(parse_cpumask("00000003").unwrap(), [0, 1]);
        assert_eq!(parse_cpumask("00000001,00000100").unwrap(), [8, 32]);
        assert_eq!(parse_cpu_list("0-2,8").unwrap(), [0, 1, 2, 8]);
        assert!(parse_cpumask("xyz").is_none());
    }

    #[test]
    fn the_check_says_agree_or_names_the_difference() {
        let t = parse("desktop-8c16t").unwrap();
        // What a kernel builds for qemu's numbering: SMT {2k, 2k+1}, MC all, LLC all.
        let all: Vec<u32> = (0..16).collect();
        let good = GuestDomains {
            domains: (0..16)
                .map(|c| (c, vec![("SMT".to_string(), vec![c & !1, c | 1]), ("MC".to_string(), all.clone())]))
                .collect(),
            llc: (0..16).map(|c| (c, all.clone())).collect(),
        };
        let (ok, lines) = check(&t, &good);
        assert!(ok, "{lines:?}");
        assert!(lines[0].contains("agree") && lines[0].contains("CPU 0: SMT 0,8, MC 0-15; LLC 0-15"), "{lines:?}");
        assert!(lines[1].starts_with("guest CPU -> preset CPU") && lines[1].contains(" 1->8"), "{lines:?}");
        // No SMT level in the guest (e.g. a kernel that does not see the threads).
        let flat = GuestDomains {
            domains: (0..16).map(|c| (c, vec![("MC".to_string(), all.clone())])).collect(),
            llc: vec![],
        };
        let (ok, lines) = check(&t, &flat);
        assert!(!ok);
        assert!(
            lines[0].starts_with("MISMATCH")
                && lines[1].contains("CPU 0 (guest CPU 0): guest MC 0-15 / model SMT 0,8, MC 0-15"),
            "{lines:?}"
        );
    }
}
