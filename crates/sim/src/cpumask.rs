//! CPU sets as bitmaps (`struct cpumask`, include/linux/cpumask.h v7.3.4).
//!
//! A task's affinity is tested once per CPU a wakeup scans; a sorted list made that a binary
//! search each time, so a 512-CPU wakeup cost thousands of instructions before it looked at a
//! runqueue. A bitmap makes the test one shift and one AND, and its memory is one bit per CPU
//! instead of four bytes.

use std::fmt;

/// A set of CPU numbers below a fixed bound, one bit per CPU, with its weight cached.
///
/// Up to 64 CPUs the bitmap lives inside the mask, so that testing a task's affinity reads no
/// separate allocation (one cache line fewer per wakeup of a task not touched recently); a set
/// of every CPU of a larger machine (the affinity of nearly every task) is stored as its count
/// alone, for the same reason; other larger masks are on the heap. Each form is 24 bytes and
/// each set has one form, so that equality stays that of the sets. Words past the CPU count
/// are zero.
#[derive(Clone, PartialEq, Eq)]
pub struct CpuMask(Repr);

#[derive(Clone, PartialEq, Eq)]
enum Repr {
    Inline {
        word: u64,
        weight: u32,
    },
    Heap {
        words: Box<[u64]>,
        weight: u32,
    },
    /// Every CPU below `nr_cpus` (more than 64).
    Full {
        nr_cpus: u32,
    },
}

impl CpuMask {
    /// The bitmap's words; `None` for the full form, which has none.
    #[inline]
    fn words(&self) -> Option<&[u64]> {
        match &self.0 {
            Repr::Inline { word, .. } => Some(std::slice::from_ref(word)),
            Repr::Heap { words, .. } => Some(words),
            Repr::Full { .. } => None,
        }
    }

    /// The set of `cpus` (ascending or not, duplicates allowed) among `nr_cpus` CPUs; CPUs at
    /// or beyond `nr_cpus` are the caller's error and are left out.
    pub fn from_cpus(nr_cpus: u32, cpus: impl IntoIterator<Item = u32>) -> CpuMask {
        let mut w = vec![0u64; (nr_cpus as usize).div_ceil(64).max(1)];
        for c in cpus.into_iter().filter(|&c| c < nr_cpus) {
            w[c as usize / 64] |= 1 << (c % 64);
        }
        let weight = w.iter().map(|w| w.count_ones()).sum();
        match *w.as_slice() {
            [word] => CpuMask(Repr::Inline { word, weight }),
            _ if weight == nr_cpus => CpuMask(Repr::Full { nr_cpus }),
            _ => CpuMask(Repr::Heap { words: w.into_boxed_slice(), weight }),
        }
    }

    /// Every CPU of `nr_cpus` (`cpu_possible_mask`).
    pub fn full(nr_cpus: u32) -> CpuMask {
        CpuMask::from_cpus(nr_cpus, 0..nr_cpus)
    }

    /// `cpumask_test_cpu()`.
    #[inline]
    pub fn contains(&self, cpu: u32) -> bool {
        match self.words() {
            Some(words) => words.get(cpu as usize / 64).is_some_and(|w| w & (1 << (cpu % 64)) != 0),
            None => cpu < self.weight(),
        }
    }

    /// `cpumask_weight()`: `p->nr_cpus_allowed` for an affinity mask.
    #[inline]
    pub fn weight(&self) -> u32 {
        match self.0 {
            Repr::Inline { weight, .. } | Repr::Heap { weight, .. } => weight,
            Repr::Full { nr_cpus } => nr_cpus,
        }
    }

    /// `cpumask_first()`, `None` when empty.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The CPUs of the set, ascending (`for_each_cpu`).
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let full = match self.0 {
            Repr::Full { nr_cpus } => 0..nr_cpus,
            _ => 0..0,
        };
        full.chain(self.words().unwrap_or_default().iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let b = w.trailing_zeros();
                    w &= w - 1;
                    i as u32 * 64 + b
                })
            })
        }))
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

    #[test]
    fn a_mask_is_24_bytes_and_inline_up_to_64_cpus() {
        assert_eq!(std::mem::size_of::<CpuMask>(), 24);
        assert!(matches!(CpuMask::full(64).0, Repr::Inline { .. }));
        assert!(matches!(CpuMask::full(65).0, Repr::Full { nr_cpus: 65 }));
        assert!(matches!(CpuMask::from_cpus(65, 1..65).0, Repr::Heap { .. }));
        // One form per set: the full set built CPU by CPU is the full form.
        assert_eq!(CpuMask::from_cpus(192, (0..192).rev()), CpuMask::full(192));
    }

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

        /// The full set of any size (the stored-count form above 64 CPUs) against 0..nr.
        #[test]
        fn full_mask_matches_the_range(nr in 1u32..600) {
            let m = CpuMask::full(nr);
            prop_assert!(m.iter().eq(0..nr));
            prop_assert_eq!(m.weight(), nr);
            prop_assert_eq!(m.first(), Some(0));
            for c in 0..nr + 70 {
                prop_assert_eq!(m.contains(c), c < nr);
            }
            prop_assert_eq!(m, CpuMask::from_cpus(nr, 0..nr));
        }
    }
}
