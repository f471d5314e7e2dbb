//! Machine descriptions from outside the simulator: topology TOML files, cost files and the
//! host's `/sys`. Everything here does I/O or parsing and hands a plain
//! [`sim::topology::Topology`] to the simulator, whose core stays pure.
//!
//! # Topology files
//!
//! A topology file has a `[machine]` table and describes the CPUs in one of two forms.
//!
//! **Uniform form**: counts in `[machine]`. CPUs are numbered as x86 firmware usually does (the
//! first thread of every core, then the second threads), each core is its own cluster.
//! `packages` and `cores_per_llc` are required; `nodes_per_package`, `llcs_per_node` and
//! `threads_per_core` default to 1; `remote_distance` (the SLIT value between any two nodes) is
//! required once there is more than one node, unless a `distance` matrix is given.
//!
//! ```
//! let text = r#"
//! [machine]
//! name = "my-2s"
//! description = "2-socket server, 48 cores per socket, SMT2"
//! packages = 2
//! nodes_per_package = 1
//! llcs_per_node = 1
//! cores_per_llc = 48
//! threads_per_core = 2
//! remote_distance = 21
//!
//! [costs]
//! syscall_ns = 120
//! "#;
//! let topology = machine::parse_topology_toml(text, "my-2s.toml").unwrap();
//! assert_eq!(topology.nr_cpus(), 192);
//! assert_eq!(topology.costs.syscall_ns, 120);
//! ```
//!
//! **Explicit form**: one `[[cpu]]` table per CPU with `id`, `core`, `llc`, `package` and `node`,
//! optional `cluster` (defaults to the core: no cluster level) and `capacity` (defaults to 1024).
//! Ids are dense indices starting at 0; CPUs may be listed in any order but each exactly once.
//! A machine with more than one node needs `distance`, the SLIT as a list of rows.
//!
//! ```
//! let text = r#"
//! [machine]
//! name = "tiny-numa"
//! distance = [[10, 21], [21, 10]]
//!
//! [[cpu]]
//! id = 0
//! core = 0
//! llc = 0
//! package = 0
//! node = 0
//!
//! [[cpu]]
//! id = 1
//! core = 1
//! llc = 1
//! package = 1
//! node = 1
//! "#;
//! let topology = machine::parse_topology_toml(text, "tiny.toml").unwrap();
//! assert_eq!(topology.nr_nodes(), 2);
//! ```
//!
//! Both forms accept `description`, `source` (where the figures come from) and `costs_preset`
//! (a preset whose costs are the starting point instead of the x86 server defaults) in
//! `[machine]`, and a `[costs]` table overriding cost keys in nanoseconds (see
//! [`sim::topology::Costs::KEYS`]).
//!
//! Unknown keys are errors. Every error names the file, the line and the key, e.g.
//! `my.toml:7:1: unknown field `cores`, expected one of ...` or
//! `my.toml:14: field `llc`: cpu 3: 1 differs from 0 of its SMT sibling CPU 2: SMT siblings
//! share their LLC`.
//!
//! # Topology specs
//!
//! [`resolve_topology`] reads what `--topology` takes: a preset, `smp:N`, `host` or a file,
//! optionally restricted with `:cpus=LIST` and `:nodes=LIST` (see `slice.rs`).
//!
//! # Cost files
//!
//! `--cost-file` takes a TOML file with only a `[costs]` table of `key = nanoseconds`;
//! [`load_cost_file`] returns the overrides in file order.
//!
//! # The host
//!
//! [`host_topology`] reads `/sys/devices/system/cpu` and `/sys/devices/system/node`;
//! [`host_topology_from`] reads the same files under another root, which is how the tests feed
//! it fake trees.

mod cost_file;
mod error;
mod host;
mod slice;
mod topology_file;

pub use cost_file::{load_cost_file, parse_cost_toml};
pub use error::MachineError;
pub use host::{VM_HALTED_VCPU_WAKE_NS, VmGuest, host_topology, host_topology_from, host_topology_with, vm_guest};
pub use slice::{resolve_topology, restrict};
pub use topology_file::{load_topology_file, parse_topology_toml};
