//! Virtual time: integer nanoseconds since the start of a simulation, never a float.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, in nanoseconds (the kernel's `u64` clock values).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us * 1_000)
    }
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s * 1_000_000_000)
    }
    pub const fn ns(self) -> u64 {
        self.0
    }
    /// Elapsed time since `earlier`, zero if `earlier` is later (clocks never run backwards here,
    /// but accounting code must not underflow when two events share a timestamp).
    pub const fn since(self, earlier: Nanos) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<u64> for Nanos {
    type Output = Nanos;
    fn add(self, ns: u64) -> Nanos {
        Nanos(self.0 + ns)
    }
}

impl AddAssign<u64> for Nanos {
    fn add_assign(&mut self, ns: u64) {
        self.0 += ns;
    }
}

impl Sub for Nanos {
    type Output = u64;
    fn sub(self, rhs: Nanos) -> u64 {
        self.0 - rhs.0
    }
}

impl fmt::Display for Nanos {
    /// Seconds with microsecond precision, as ftrace prints timestamps.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06}", self.0 / 1_000_000_000, (self.0 % 1_000_000_000) / 1_000)
    }
}
