//! Topology specs: a machine (preset, `smp:N`, `host` or a TOML file) optionally followed by
//! `:cpus=LIST` and `:nodes=LIST`, which keep only those CPUs — the machine a kernel booted
//! with `maxcpus=`/`possible_cpus=`, or a cpuset partition, builds its sched domains on.
//!
//! `xeon-8369hb-4s:cpus=0-15` is the first 16 CPUs of the preset; `spr-2s-192:nodes=0` is its
//! first node; both together keep the CPUs in the list that are also on the nodes. The kept
//! CPUs are renumbered densely in their order (CPU 16 of the preset becomes CPU 0 of
//! `...:cpus=16-31`), as are cores, clusters, LLCs, packages and nodes, because the simulator
//! numbers everything from 0; the NUMA distances of the kept nodes stay as they were. Costs are
//! the preset's.
//!
//! This differs from `--cpus`, which pins the tasks with `taskset` but leaves every CPU of the
//! machine online: there, idle balancing and `select_idle_sibling` still see the whole LLC.

use std::path::Path;

use sim::topology::{CpuTopo, Topology, format_cpu_list, parse_cpu_list};

/// Resolves a topology spec (see the module documentation). The message names the part of the
/// spec that is wrong.
pub fn resolve_topology(spec: &str) -> Result<Topology, String> {
    let (machine, restrictions) = split_spec(spec);
    let mut topology = if machine.ends_with(".toml") || Path::new(machine).is_file() {
        crate::load_topology_file(Path::new(machine)).map_err(|e| e.to_string())?
    } else if machine == "host" {
        crate::host_topology().map_err(|e| e.to_string())?
    } else {
        Topology::by_name(machine)?
    };
    if restrictions.is_empty() {
        return Ok(topology);
    }
    let mut keep: Vec<bool> = vec![true; topology.nr_cpus()];
    for item in restrictions.split(':') {
        let Some((key, value)) = item.split_once('=') else {
            return Err(format!("`{spec}`: `{item}` is not cpus=LIST or nodes=LIST"));
        };
        let list = parse_cpu_list(value).map_err(|e| format!("`{spec}`: {key}=: {e}"))?;
        if list.is_empty() {
            return Err(format!("`{spec}`: {key}= is empty"));
        }
        let (limit, what) = match key {
            "cpus" => (topology.nr_cpus() as u32, "CPUs"),
            "nodes" => (topology.nr_nodes(), "nodes"),
            _ => return Err(format!("`{spec}`: unknown restriction `{key}` (cpus=LIST or nodes=LIST)")),
        };
        if let Some(bad) = list.iter().find(|&&x| x >= limit) {
            return Err(format!("`{spec}`: {key}= names {bad}, but {machine} has {what} 0-{}", limit - 1));
        }
        for c in &topology.cpus {
            let id = if key == "cpus" { c.cpu } else { c.node_id };
            if list.binary_search(&id).is_err() {
                keep[c.cpu as usize] = false;
            }
        }
    }
    let kept: Vec<u32> = (0..topology.nr_cpus() as u32).filter(|&c| keep[c as usize]).collect();
    if kept.is_empty() {
        return Err(format!("`{spec}`: no CPU is left"));
    }
    topology = restrict(&topology, &kept);
    topology.name = spec.to_string();
    topology.check().map_err(|e| format!("`{spec}`: {e}"))?;
    Ok(topology)
}

/// `machine` and the `key=value:...` part after the first colon followed by `key=` (empty
/// when there is none; `smp:4` has a colon of its own).
fn split_spec(spec: &str) -> (&str, &str) {
    let at = spec.match_indices(':').map(|(i, _)| i).find(|&i| {
        let segment = spec[i + 1..].split(':').next().unwrap_or("");
        segment.split_once('=').is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphabetic()))
    });
    match at {
        Some(i) => (&spec[..i], &spec[i + 1..]),
        None => (spec, ""),
    }
}

/// The machine made of `cpus` (ascending) of `t`, every id renumbered densely in CPU order.
pub fn restrict(t: &Topology, cpus: &[u32]) -> Topology {
    fn dense(map: &mut Vec<u32>, id: u32) -> u32 {
        match map.iter().position(|&x| x == id) {
            Some(i) => i as u32,
            None => {
                map.push(id);
                map.len() as u32 - 1
            }
        }
    }
    let (mut cores, mut clusters, mut llcs, mut packages, mut nodes) = (vec![], vec![], vec![], vec![], vec![]);
    let mut out = Vec::with_capacity(cpus.len());
    for (i, &c) in cpus.iter().enumerate() {
        let old = t.cpus[c as usize];
        out.push(CpuTopo {
            cpu: i as u32,
            smt_id: dense(&mut cores, old.smt_id),
            cluster_id: dense(&mut clusters, old.cluster_id),
            llc_id: dense(&mut llcs, old.llc_id),
            package_id: dense(&mut packages, old.package_id),
            node_id: dense(&mut nodes, old.node_id),
            capacity: old.capacity,
        });
    }
    let node_distance =
        nodes.iter().map(|&a| nodes.iter().map(|&b| t.node_distance[a as usize][b as usize]).collect()).collect();
    Topology {
        name: t.name.clone(),
        description: format!("{}; CPUs {} of {} only", t.description, format_cpu_list(cpus), t.name),
        source: t.source.clone(),
        cpus: out,
        node_distance,
        costs: t.costs.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_of_a_preset() {
        let full = Topology::preset("xeon-8369hb-4s").unwrap();
        let t = resolve_topology("xeon-8369hb-4s:cpus=0-15").unwrap();
        assert_eq!(t.nr_cpus(), 16);
        assert_eq!(t.name, "xeon-8369hb-4s:cpus=0-15");
        // CPUs 0-15 are the first threads of the first 16 cores: no SMT sibling is kept.
        assert!(!t.sched_smt_active());
        assert_eq!(full.cpus[15].package_id, 0);
        assert_eq!(t.nr_packages(), 1);

        let n = resolve_topology("spr-2s-192:nodes=1").unwrap();
        let full = Topology::preset("spr-2s-192").unwrap();
        assert_eq!(n.nr_cpus(), full.node_cpus(1).len());
        assert_eq!(n.nr_nodes(), 1);
        assert_eq!(n.node_distance, vec![vec![10]]);

        // Both restrictions: the CPUs of the list that are on the node.
        let both = resolve_topology("smp:8:cpus=2-5:nodes=0").unwrap();
        assert_eq!(both.nr_cpus(), 4);
        assert_eq!(both.cpus[3].cpu, 3);
    }

    #[test]
    fn bad_slices_name_the_part() {
        for (spec, want) in [
            ("vm-2cpu:cpus=2", "names 2"),
            ("vm-2cpu:cpus=", "is empty"),
            ("vm-2cpu:cores=1", "unknown restriction `cores`"),
            ("vm-2cpu:cpus=x", "not a CPU number"),
            ("nosuch:cpus=0", "unknown topology"),
        ] {
            let e = resolve_topology(spec).unwrap_err();
            assert!(e.contains(want), "{spec}: {e}");
        }
    }
}
