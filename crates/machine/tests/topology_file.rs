//! Topology files: both forms parse, and every kind of mistake is reported with the file, the
//! line and the key.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use machine::{MachineError, load_topology_file, parse_topology_toml};
use sim::topology::DomainLevel;

fn error(text: &str) -> MachineError {
    match parse_topology_toml(text, "test.toml") {
        Ok(topology) => panic!("expected an error, got topology {}", topology.name),
        Err(error) => error,
    }
}

const SMT_PAIR: &str = r#"
[machine]
name = "pair"
source = "hand-written"

[[cpu]]
id = 1
core = 0
llc = 0
package = 0
node = 0

[[cpu]]
id = 0
core = 0
llc = 0
package = 0
node = 0
capacity = 1024
"#;

#[test]
fn uniform_form_builds_the_kernel_domains() {
    let text = r#"
[machine]
name = "spr-like"
packages = 2
cores_per_llc = 48
threads_per_core = 2
remote_distance = 21
costs_preset = "ampere-altra-80"

[costs]
syscall_ns = 120
"#;
    let topology = parse_topology_toml(text, "spr.toml").unwrap();
    assert_eq!((topology.name.as_str(), topology.nr_cpus(), topology.nr_nodes()), ("spr-like", 192, 2));
    assert_eq!(topology.source, "topology file spr.toml");
    assert_eq!(topology.costs.syscall_ns, 120);
    assert_eq!(topology.costs.migration_llc_ns, 4_500, "base costs come from costs_preset");
    let domains = topology.build_domains();
    let levels: Vec<DomainLevel> = domains.of(0).iter().map(|sd| sd.level).collect();
    assert_eq!(levels, [DomainLevel::Smt, DomainLevel::Mc, DomainLevel::Numa(1)]);
}

#[test]
fn uniform_form_takes_a_distance_matrix() {
    let text = r#"
[machine]
name = "ring"
packages = 4
cores_per_llc = 2
distance = [[10, 20, 30, 20], [20, 10, 20, 30], [30, 20, 10, 20], [20, 30, 20, 10]]
"#;
    let topology = parse_topology_toml(text, "ring.toml").unwrap();
    assert_eq!(topology.node_distance[0][2], 30);
    assert_eq!(topology.build_domains().of(0).len(), 3);
}

#[test]
fn explicit_form_accepts_any_order() {
    let topology = parse_topology_toml(SMT_PAIR, "pair.toml").unwrap();
    assert_eq!(topology.nr_cpus(), 2);
    assert!(topology.sched_smt_active());
    assert_eq!(topology.source, "hand-written");
    assert_eq!(topology.smt_siblings(0), [0, 1]);
}

#[test]
fn unknown_field_names_line_and_field() {
    let text = "[machine]\nname = \"x\"\npackages = 1\ncores = 4\n";
    let error = error(text);
    let message = error.to_string();
    assert!(matches!(error, MachineError::Syntax { line: 4, .. }), "{message}");
    assert!(message.starts_with("test.toml:4:"), "{message}");
    assert!(message.contains("unknown field `cores`"), "{message}");
}

#[test]
fn unknown_cpu_field_names_its_line() {
    let text = SMT_PAIR.replace("capacity = 1024", "capacty = 1024");
    let message = error(&text).to_string();
    assert!(message.starts_with("test.toml:19:"), "{message}");
    assert!(message.contains("`capacty`"), "{message}");
}

#[test]
fn wrong_type_names_the_field() {
    let text = "[machine]\nname = \"x\"\npackages = 1\ncores_per_llc = \"four\"\n";
    let message = error(text).to_string();
    assert!(message.starts_with("test.toml:4:"), "{message}");
    assert!(message.contains("cores_per_llc"), "{message}");
}

#[test]
fn malformed_toml_names_the_line() {
    let message = error("[machine]\nname = \"x\"\npackages = = 2\n").to_string();
    assert!(message.starts_with("test.toml:3:"), "{message}");
}

#[test]
fn impossible_topology_names_the_field_and_line() {
    let text = SMT_PAIR.replacen("llc = 0", "llc = 1", 1);
    let error = error(&text);
    let message = error.to_string();
    assert!(matches!(&error, MachineError::Invalid { field, line: Some(_), .. } if field == "llc"), "{message}");
    // CPU 1 is listed first but CPU 0 is the reference sibling, so the complaint is about CPU 1.
    assert!(message.starts_with("test.toml:9: field `llc`: cpu 1:"), "{message}");
    assert!(message.contains("SMT siblings share their LLC"), "{message}");
}

#[test]
fn asymmetric_distance_is_rejected() {
    let text = r#"
[machine]
name = "lopsided"
packages = 2
cores_per_llc = 2
distance = [[10, 21], [20, 10]]
"#;
    let message = error(text).to_string();
    assert!(message.starts_with("test.toml:6: field `distance`"), "{message}");
    assert!(message.contains("not symmetric"), "{message}");
}

#[test]
fn bad_uniform_count_names_the_key() {
    let text = "[machine]\nname = \"x\"\npackages = 1\ncores_per_llc = 0\n";
    let message = error(text).to_string();
    assert_eq!(message, "test.toml:4: field `cores_per_llc`: must be at least 1");
}

#[test]
fn multi_node_uniform_needs_a_distance() {
    let message = error("[machine]\nname = \"x\"\npackages = 2\ncores_per_llc = 2\n").to_string();
    assert!(message.contains("field `remote_distance`: missing"), "{message}");
}

#[test]
fn both_forms_at_once_are_rejected() {
    let text = SMT_PAIR.replace("source = \"hand-written\"", "packages = 1");
    let message = error(&text).to_string();
    assert!(message.starts_with("test.toml:4: field `packages`: give either"), "{message}");
}

#[test]
fn duplicate_and_missing_cpu_ids_are_rejected() {
    let duplicate = SMT_PAIR.replacen("id = 1", "id = 0", 1);
    let message = error(&duplicate).to_string();
    assert!(message.starts_with("test.toml:14: field `id`: CPU 0 is listed twice (also at line 7)"), "{message}");
    let gap = SMT_PAIR.replacen("id = 1", "id = 2", 1);
    assert!(error(&gap).to_string().contains("1 is missing"));
}

#[test]
fn unknown_cost_key_lists_the_known_ones() {
    let text = format!("{SMT_PAIR}\n[costs]\nsyscall_ns = 90\nsycall_ns = 100\n");
    let error = error(&text);
    let message = error.to_string();
    assert!(matches!(&error, MachineError::Invalid { field, .. } if field == "costs.sycall_ns"), "{message}");
    assert!(message.starts_with("test.toml:23:"), "{message}");
    assert!(message.contains("known keys: syscall_ns"), "{message}");
}

#[test]
fn unknown_costs_preset_is_rejected() {
    let text = SMT_PAIR.replace("source = \"hand-written\"", "costs_preset = \"cray-1\"");
    let message = error(&text).to_string();
    assert!(message.contains("field `costs_preset`: unknown preset `cray-1`"), "{message}");
}

#[test]
fn missing_file_names_the_path() {
    let path = std::env::temp_dir().join("machine-test-no-such-topology.toml");
    let error = load_topology_file(&path).unwrap_err();
    assert!(matches!(error, MachineError::Read { .. }));
    assert!(error.to_string().contains("machine-test-no-such-topology.toml"), "{error}");
}

/// Found by the topology fuzz target: a node id of u32::MAX overflowed the node count.
#[test]
fn node_id_beyond_the_cpus_names_its_line() {
    let text = SMT_PAIR.replacen("node = 0", "node = 4294967295", 1);
    let e = error(&text).to_string();
    assert!(e.contains("test.toml:11: field `node`"), "{e}");
    assert!(e.contains("node ids must be below the CPU count"), "{e}");
}
