//! schedlab vm: a real kernel under qemu running schedlab's own native mode, so a feature
//! A/B can be measured on a kernel (stock or patched) this machine does not run.
//!
//! The pieces, in the order a run uses them: [`kernel`] (a Debian kernel package, cached, or
//! a user's image), [`spec`] (what a guest can be told: features, sysctls, the preemption
//! model), [`guest`] (the guest's `/init`), [`initramfs`] and [`cpio`] (the archive built on
//! the host), [`qemu`] (one boot, killed by pid on timeout), [`console`] (the agent's report
//! from its serial port, oopses from the console), [`session`] (a kernel booted any number of
//! times), [`schedstat`] (`/proc/schedstat` deltas per version), then the commands: [`run`]
//! (`vm run`), [`compare`] (`compare --vm`: the model's A/B table from real boots, optionally
//! into the results store), [`sweep`] (a sweep plan's `[[vm]]` tables, into the store) and
//! [`validate`] (`validate --vm`: guest beside the model with the guest's calibrated costs);
//! [`cleanup`] is what Ctrl-C must undo.

pub mod cleanup;
pub mod compare;
pub mod console;
pub mod cpio;
pub mod guest;
pub mod initramfs;
pub mod kernel;
pub mod qemu;
pub mod run;
pub mod schedstat;
pub mod session;
pub mod spec;
pub mod sweep;
pub mod topology;
pub mod validate;

pub use cleanup::interrupt;
pub use kernel::KernelSource;
pub use qemu::Accel;
pub use run::{Variant, VmOptions, VmReport, parse_topology, run};
pub use session::{Session, SessionOptions};

/// Why a vm run failed.
#[derive(Debug)]
pub enum VmError {
    /// Bad input or a missing host package: the message says what to change (exit 2).
    Usage(String),
    /// The guest misbehaved (oops, timeout, agent error); the message carries its console.
    Guest(String),
    /// The host failed (I/O, qemu could not start).
    System(String),
}

impl std::fmt::Display for VmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VmError::Usage(m) | VmError::Guest(m) | VmError::System(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for VmError {}
