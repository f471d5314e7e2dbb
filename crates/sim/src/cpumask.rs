//! CPU sets as bitmaps (`struct cpumask`, include/linux/cpumask.h v7.3.4).
//!
//! A task's affinity is tested once per CPU a wakeup scans; a sorted list made that a binary
//! search each time, so a 512-CPU wakeup cost thousands of instructions before it looked at a
//! runqueue. A bitmap makes the test one shift and one AND, and its memory is one bit per CPU
//! instead of four bytes.

use std::fmt;

/// A set of CPU numbers below a fixed bound, one bit per CPU, with its weight cached.
#[derive(Clone, PartialEq, Eq)]
pub struct CpuMask {
    words: Words,
    weight: u32,
}

/// The bitmap's words: inside the mask for up to 128 CPUs, so that testing a task's affinity
/// reads no separate allocation (one cache line fewer per wakeup of a task not touched
/// recently), else on the heap. Words past the CPU count are zero in both forms.
#[derive(Clone, PartialEq, Eq)]
enum Words {
    Inline([u64; Words::INLINE]),
    Heap(Box<[u64]>),
}

impl Words {
    const INLINE: usize = 2;

    fn zeroed(n: usize) -> Words {
        if n <= Self::INLINE { Words::Inline([0; Self::INLINE]) } else { Words::Heap(vec![0; n].into_boxed_slice()) }
    }

    #[inline]
    fn as_slice(&self) -> &[u64] {
        match self {
            Words::Inline(w) => w,
            Words::Heap(w) => w,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u64] {
        match self {
            Words::Inline(w) => w,
            Words::Heap(w) => w,
        }
    }
}

impl CpuMask {
    /// The set of `cpus` (ascending or not, duplicates allowed) among `nr_cpus` CPUs; CPUs at
    /// or beyond `nr_cpus` are the caller's error and are left out.
    pub fn from_cpus(nr_cpus: u32, cpus: impl IntoIterator<Item = u32>) -> CpuMask {
        let mut words = Words::zeroed((nr_cpus as usize).div_ceil(64));
        let w = words.as_mut_slice();
        for c in cpus.into_iter().filter(|&c| c < nr_cpus) {
            w[c as usize / 64] |= 1 << (c % 64);
        }
        let weight = w.iter().map(|w| w.count_ones()).sum();
        CpuMask { words, weight }
    }

    /// Every CPU of `nr_cpus` (`cpu_possible_mask`).
    pub fn full(nr_cpus: u32) -> CpuMask {
        CpuMask::from_cpus(nr_cpus, 0..nr_cpus)
    }

    /// `cpumask_test_cpu()`.
    #[inline]
    pub fn contains(&self, cpu: u32) -> bool {
        self.words.as_slice().get(cpu as usize / 64).is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    /// `cpumask_weight()`: `p->nr_cpus_allowed` for an affinity mask.
    #[inline]
    pub fn weight(&self) -> u32 {
        self.weight
    }

    /// `cpumask_first()`, `None` when empty.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The CPUs of the set, ascending (`for_each_cpu`).
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.as_slice().iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let b = w.trailing_zeros();
                    w &= w - 1;
                    i as u32 * 64 + b
                })
            })
        })
    }
}

impl fmt::Debug for CpuMask {
    /// As the sorted CPU list it replaced, so messages read the same.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The mask against its oracle, a sorted, deduplicated list.
        #[test]
        fn mask_matches_a_sorted_list(nr in 1u32..300, cpus in proptest::collection::vec(0u32..320, 0..80)) {
            let m = CpuMask::from_cpus(nr, cpus.iter().copied());
            let mut list: Vec<u32> = cpus.into_iter().filter(|&c| c < nr).collect();
            list.sort_unstable();
            list.dedup();
            prop_assert_eq!(m.iter().collect::<Vec<_>>(), list.clone());
            prop_assert_eq!(m.weight() as usize, list.len());
            prop_assert_eq!(m.first(), list.first().copied());
            for c in 0..nr + 70 {
                prop_assert_eq!(m.contains(c), list.binary_search(&c).is_ok());
            }
            prop_assert_eq!(format!("{m:?}"), format!("{list:?}"));
        }
    }
}
