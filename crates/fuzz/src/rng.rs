//! The generators' random source: sim's seeded xoshiro256++, so a fuzzing session replays
//! from its seed.

use sim::rng::SimRng;

pub struct Rng(SimRng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SimRng::new(seed))
    }
    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below(n.max(1) as u64) as usize
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.0.below(hi - lo + 1)
    }
    /// True with probability `num/den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.0.below(den) < num
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    pub fn u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// A number for a numeric field: mostly small and plausible, often a boundary.
    pub fn number(&mut self) -> String {
        match self.below(10) {
            0..=3 => self.range(0, 1000).to_string(),
            4 => self.range(0, 10_000_000).to_string(),
            5 => self.pick(BOUNDARIES).to_string(),
            6 => format!("-{}", self.range(0, 100)),
            7 => format!("{}.{}", self.range(0, 100), self.range(0, 999)),
            8 => self.u64().to_string(),
            _ => self.pick(ODD_NUMBERS).to_string(),
        }
    }
}

/// Integer boundaries where parsers and arithmetic break.
pub const BOUNDARIES: &[&str] = &[
    "0",
    "1",
    "-1",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "4096",
    "4097",
    "1000000000",
    "1000000001",
];

/// Numbers in the shapes a parser may not expect.
pub const ODD_NUMBERS: &[&str] =
    &["1e308", "-1e308", "1e-308", "NaN", "nan", "inf", "-inf", "0x10", "1_000", "+5", "007", "1.", ".5", "", " 1 "];
