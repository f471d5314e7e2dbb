//! Topology files: a TOML description of a machine in either the uniform or the explicit form
//! (see the crate documentation for the format). Parsing is strict: unknown keys are errors, and
//! every error carries the file, the line and the key.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use sim::topology::{CpuTopo, LOCAL_DISTANCE, SCHED_CAPACITY_SCALE, Topology, TopologyError, UniformShape};
use toml::Spanned;

use crate::error::{MachineError, key_at, line_column};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TopologyFile {
    machine: MachineTable,
    #[serde(default)]
    cpu: Vec<CpuTable>,
    #[serde(default)]
    costs: BTreeMap<String, Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MachineTable {
    name: Spanned<String>,
    description: Option<String>,
    source: Option<String>,
    costs_preset: Option<Spanned<String>>,
    packages: Option<Spanned<u32>>,
    nodes_per_package: Option<Spanned<u32>>,
    llcs_per_node: Option<Spanned<u32>>,
    cores_per_llc: Option<Spanned<u32>>,
    threads_per_core: Option<Spanned<u32>>,
    remote_distance: Option<Spanned<u32>>,
    distance: Option<Spanned<Vec<Vec<u32>>>>,
}

impl MachineTable {
    /// The uniform-form keys that are present, in file order of declaration.
    fn uniform_keys(&self) -> Vec<(&'static str, &Spanned<u32>)> {
        [
            ("packages", &self.packages),
            ("nodes_per_package", &self.nodes_per_package),
            ("llcs_per_node", &self.llcs_per_node),
            ("cores_per_llc", &self.cores_per_llc),
            ("threads_per_core", &self.threads_per_core),
            ("remote_distance", &self.remote_distance),
        ]
        .into_iter()
        .filter_map(|(key, value)| value.as_ref().map(|value| (key, value)))
        .collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CpuTable {
    id: Spanned<u32>,
    core: Spanned<u32>,
    cluster: Option<Spanned<u32>>,
    llc: Spanned<u32>,
    package: Spanned<u32>,
    node: Spanned<u32>,
    capacity: Option<Spanned<u32>>,
}

/// Reads and parses a topology file; `origin` in errors is the path as given.
pub fn load_topology_file(path: &Path) -> Result<Topology, MachineError> {
    let text = std::fs::read_to_string(path).map_err(|error| MachineError::Read { path: path.to_path_buf(), error })?;
    parse_topology_toml(&text, &path.display().to_string())
}

/// Parses a topology description. `origin` names the text in errors (normally the file path).
pub fn parse_topology_toml(text: &str, origin: &str) -> Result<Topology, MachineError> {
    let file: TopologyFile = toml::from_str(text).map_err(|error| syntax_error(text, origin, &error))?;
    let context = Context { text, origin };
    let mut topology = if file.cpu.is_empty() {
        context.uniform(&file.machine)?
    } else {
        if let Some((key, value)) = file.machine.uniform_keys().first() {
            return Err(context.invalid(
                value.span().start,
                key,
                "give either the uniform keys in [machine] or [[cpu]] tables, not both".into(),
            ));
        }
        context.explicit(&file.machine, &file.cpu)?
    };
    topology.name = file.machine.name.get_ref().clone();
    if let Some(description) = &file.machine.description {
        topology.description = description.clone();
    }
    topology.source = match &file.machine.source {
        Some(source) => source.clone(),
        None => format!("topology file {origin}"),
    };
    if let Some(preset) = &file.machine.costs_preset {
        let Some(base) = Topology::preset(preset.get_ref()) else {
            let known = sim::topology::PRESET_NAMES.join(", ");
            let message = format!("unknown preset `{}`; known: {known}", preset.get_ref());
            return Err(context.invalid(preset.span().start, "costs_preset", message));
        };
        topology.costs = base.costs;
    }
    let mut costs: Vec<(&String, &Spanned<u64>)> = file.costs.iter().collect();
    costs.sort_by_key(|(_, value)| value.span().start);
    for (key, value) in costs {
        if let Err(message) = topology.costs.set(key, *value.get_ref()) {
            return Err(context.invalid(value.span().start, &format!("costs.{key}"), message));
        }
    }
    topology.check().map_err(|error| context.topology_error(&file, &error))?;
    Ok(topology)
}

/// Turns a TOML error into one that names the line, the column and, when TOML's message does
/// not already, the key.
pub(crate) fn syntax_error(text: &str, origin: &str, error: &toml::de::Error) -> MachineError {
    let offset = error.span().map_or(0, |span| span.start);
    let (line, column) = line_column(text, offset);
    let mut message = error.message().trim().to_string();
    if let Some(key) = key_at(text, offset)
        && !message.contains(&format!("`{key}`"))
    {
        message = format!("field `{key}`: {message}");
    }
    MachineError::Syntax { origin: origin.to_string(), line, column, message }
}

struct Context<'a> {
    text: &'a str,
    origin: &'a str,
}

impl Context<'_> {
    fn invalid(&self, offset: usize, field: &str, message: String) -> MachineError {
        let (line, _) = line_column(self.text, offset);
        MachineError::Invalid { origin: self.origin.to_string(), line: Some(line), field: field.to_string(), message }
    }

    fn uniform(&self, machine: &MachineTable) -> Result<Topology, MachineError> {
        let required = |key: &'static str, value: &Option<Spanned<u32>>| {
            value.as_ref().map(|v| *v.get_ref()).ok_or_else(|| {
                self.invalid(
                    machine.name.span().start,
                    key,
                    format!("missing: give `{key}` in [machine] (uniform form) or list [[cpu]] tables"),
                )
            })
        };
        let optional = |value: &Option<Spanned<u32>>| value.as_ref().map_or(1, |v| *v.get_ref());
        let packages = required("packages", &machine.packages)?;
        let cores_per_llc = required("cores_per_llc", &machine.cores_per_llc)?;
        let nodes_per_package = optional(&machine.nodes_per_package);
        let mut remote_distance = machine.remote_distance.as_ref().map_or(0, |v| *v.get_ref());
        if packages.saturating_mul(nodes_per_package) > 1 && remote_distance == 0 {
            match &machine.distance {
                // The explicit matrix replaces the single remote distance below.
                Some(_) => remote_distance = LOCAL_DISTANCE + 1,
                None => {
                    let message = "missing: the machine has more than one node, so give \
                                   `remote_distance` or a `distance` matrix"
                        .to_string();
                    return Err(self.invalid(machine.name.span().start, "remote_distance", message));
                }
            }
        }
        let shape = UniformShape {
            packages,
            nodes_per_package,
            llcs_per_node: optional(&machine.llcs_per_node),
            cores_per_llc,
            threads_per_core: optional(&machine.threads_per_core),
            remote_distance,
        };
        let mut topology = Topology::uniform(machine.name.get_ref(), shape).map_err(|error| {
            let offset = machine
                .uniform_keys()
                .iter()
                .find(|(key, _)| *key == error.field)
                .map_or(machine.name.span().start, |(_, value)| value.span().start);
            self.invalid(offset, error.field, error.message)
        })?;
        if let Some(distance) = &machine.distance {
            topology.node_distance = distance.get_ref().clone();
        }
        Ok(topology)
    }

    fn explicit(&self, machine: &MachineTable, entries: &[CpuTable]) -> Result<Topology, MachineError> {
        let mut order: Vec<&CpuTable> = entries.iter().collect();
        order.sort_by_key(|entry| *entry.id.get_ref());
        for pair in order.windows(2) {
            if pair[0].id.get_ref() == pair[1].id.get_ref() {
                let line = |entry: &CpuTable| line_column(self.text, entry.id.span().start).0;
                let (first, second) = (line(pair[0]), line(pair[1]));
                let (earlier, later) = if first < second { (first, pair[1]) } else { (second, pair[0]) };
                let message = format!("CPU {} is listed twice (also at line {earlier})", pair[0].id.get_ref());
                return Err(self.invalid(later.id.span().start, "id", message));
            }
        }
        for (expected, entry) in order.iter().enumerate() {
            if *entry.id.get_ref() != expected as u32 {
                let message = format!("CPU ids must be 0..n without gaps, but {expected} is missing");
                return Err(self.invalid(entry.id.span().start, "id", message));
            }
        }
        // Node ids index the distance matrix: one beyond the CPU count cannot be a real node
        // (and u32::MAX would overflow the node count).
        for entry in &order {
            let node = *entry.node.get_ref();
            if node as usize >= order.len() {
                let message = format!("node {node} with {} CPUs: node ids must be below the CPU count", order.len());
                return Err(self.invalid(entry.node.span().start, "node", message));
            }
        }
        let cpus = order
            .iter()
            .map(|entry| CpuTopo {
                cpu: *entry.id.get_ref(),
                smt_id: *entry.core.get_ref(),
                cluster_id: entry.cluster.as_ref().map_or(*entry.core.get_ref(), |v| *v.get_ref()),
                llc_id: *entry.llc.get_ref(),
                package_id: *entry.package.get_ref(),
                node_id: *entry.node.get_ref(),
                capacity: entry.capacity.as_ref().map_or(SCHED_CAPACITY_SCALE, |v| *v.get_ref()),
            })
            .collect::<Vec<_>>();
        let nodes = cpus.iter().map(|c| c.node_id + 1).max().unwrap_or(1) as usize;
        let node_distance = match &machine.distance {
            Some(distance) => distance.get_ref().clone(),
            None if nodes == 1 => vec![vec![LOCAL_DISTANCE]],
            None => {
                let message = format!("missing: the CPUs name {nodes} nodes, so a `distance` matrix is needed");
                return Err(self.invalid(machine.name.span().start, "distance", message));
            }
        };
        Ok(Topology {
            name: machine.name.get_ref().clone(),
            description: format!("{} CPUs described in {}", cpus.len(), self.origin),
            source: String::new(),
            cpus,
            node_distance,
            costs: sim::topology::Costs::x86_server(),
        })
    }

    /// Points a semantic error at the key it is about: the CPU's own entry for per-CPU errors,
    /// the `distance` or `name` key otherwise.
    fn topology_error(&self, file: &TopologyFile, error: &TopologyError) -> MachineError {
        let key = match error.field {
            "cpu" => "id",
            "smt_id" => "core",
            "cluster_id" => "cluster",
            "llc_id" => "llc",
            "package_id" => "package",
            "node_id" => "node",
            "node_distance" => "distance",
            other => other,
        };
        let message = match error.cpu {
            Some(cpu) => format!("cpu {cpu}: {}", error.message),
            None => error.message.clone(),
        };
        let entry = error.cpu.and_then(|cpu| file.cpu.iter().find(|e| *e.id.get_ref() == cpu));
        let offset = match (entry, key) {
            (Some(e), "id") => Some(e.id.span().start),
            (Some(e), "core") => Some(e.core.span().start),
            (Some(e), "cluster") => Some(e.cluster.as_ref().unwrap_or(&e.core).span().start),
            (Some(e), "llc") => Some(e.llc.span().start),
            (Some(e), "package") => Some(e.package.span().start),
            (Some(e), "node") => Some(e.node.span().start),
            (Some(e), "capacity") => Some(e.capacity.as_ref().unwrap_or(&e.id).span().start),
            (_, "distance") => file.machine.distance.as_ref().map(|d| d.span().start),
            (_, "name") => Some(file.machine.name.span().start),
            _ => None,
        };
        match offset {
            Some(offset) => self.invalid(offset, key, message),
            None => {
                MachineError::Invalid { origin: self.origin.to_string(), line: None, field: key.to_string(), message }
            }
        }
    }
}
