//! schedlab vm: a real kernel under qemu running schedlab's own native mode, so a feature
//! A/B can be measured on a kernel (stock or patched) this machine does not run.
//!
//! The pieces, in the order a run uses them: [`kernel`] (a Debian kernel package, cached, or
//! a user's image), [`guest`] (the guest's `/init`), [`initramfs`] and [`cpio`] (the archive
//! built on the host), [`qemu`] (one boot, killed by pid on timeout), [`console`] (the guest's
//! report read back from the serial console), [`run`] (variants, repetitions, the table) and
//! [`cleanup`] (what Ctrl-C must undo).

pub mod cleanup;
pub mod console;
pub mod cpio;
pub mod guest;
pub mod initramfs;
pub mod kernel;
pub mod qemu;
pub mod run;

pub use cleanup::interrupt;
pub use kernel::KernelSource;
pub use qemu::Accel;
pub use run::{Variant, VmOptions, VmReport, parse_topology, run};

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
