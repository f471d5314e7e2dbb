//! Latency percentiles with bounded memory: an HDR histogram (3 significant digits).

use hdrhistogram::Histogram;

/// Nanosecond latencies; memory does not grow with the number of samples.
#[derive(Clone, Debug)]
pub struct LatencyHistogram(Histogram<u64>);

impl Default for LatencyHistogram {
    fn default() -> Self {
        // 1 ns .. 1000 s at 3 significant digits.
        #[allow(clippy::expect_used, reason = "constant, valid bounds")]
        let h = Histogram::new_with_bounds(1, 1_000_000_000_000, 3).expect("static bounds");
        LatencyHistogram(h)
    }
}

/// p50/p90/p99/max of a histogram, in ns (0 when empty).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
    pub count: u64,
}

impl LatencyHistogram {
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }
    pub fn add(&mut self, other: &LatencyHistogram) {
        #[allow(clippy::expect_used, reason = "every LatencyHistogram has the same constant bounds")]
        self.0.add(&other.0).expect("same bounds");
    }
    pub fn len(&self) -> u64 {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn percentiles(&self) -> Percentiles {
        if self.0.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            p50: self.0.value_at_quantile(0.50),
            p90: self.0.value_at_quantile(0.90),
            p99: self.0.value_at_quantile(0.99),
            max: self.0.max(),
            count: self.0.len(),
        }
    }
}

/// A small log-linear histogram for per-task latencies: 4 sub-buckets per power of two
/// (values are reported at the low edge of their bucket, at most 20 % below the truth) from
/// 1 ns to 2^40 ns (≈18 min), in 656 bytes, allocated at the first sample. The run-wide
/// histogram uses the full-precision `LatencyHistogram`; this one keeps per-task memory small.
#[derive(Clone, Debug, Default)]
pub struct CompactHistogram {
    counts: Option<Box<[u32; Self::BUCKETS]>>,
    total: u64,
    max: u64,
}

impl CompactHistogram {
    const SUB_BITS: u32 = 2;
    const OCTAVES: usize = 41;
    const BUCKETS: usize = Self::OCTAVES << Self::SUB_BITS;

    fn bucket(ns: u64) -> usize {
        let ns = ns.max(1);
        let octave = 63 - ns.leading_zeros();
        if octave < Self::SUB_BITS {
            return ns as usize;
        }
        let sub = (ns >> (octave - Self::SUB_BITS)) & ((1 << Self::SUB_BITS) - 1);
        (((octave - Self::SUB_BITS + 1) << Self::SUB_BITS) as usize + sub as usize).min(Self::BUCKETS - 1)
    }

    /// The lowest value that falls in bucket `b`.
    fn bucket_low(b: usize) -> u64 {
        let sub_count = 1usize << Self::SUB_BITS;
        if b < sub_count {
            return b as u64;
        }
        let octave = (b >> Self::SUB_BITS) as u32 - 1 + Self::SUB_BITS;
        let sub = (b & (sub_count - 1)) as u64;
        (1u64 << octave) | (sub << (octave - Self::SUB_BITS))
    }

    pub fn record(&mut self, ns: u64) {
        let b = Self::bucket(ns);
        let counts = self.counts.get_or_insert_with(|| Box::new([0; Self::BUCKETS]));
        counts[b] = counts[b].saturating_add(1);
        self.total += 1;
        self.max = self.max.max(ns);
    }

    /// The value at quantile `q`: the low edge of the bucket holding it (exact below 8 ns).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        let Some(counts) = &self.counts else { return 0 };
        for (b, &c) in counts.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                return Self::bucket_low(b).min(self.max);
            }
        }
        self.max
    }

    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            max: self.max,
            count: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_histogram_is_within_its_resolution() {
        let mut h = CompactHistogram::default();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        let p = h.percentiles();
        let near = |got: u64, want: u64| got <= want && got as f64 >= want as f64 * 0.8;
        assert!(near(p.p50, 5_000_000), "p50 {}", p.p50);
        assert!(near(p.p99, 9_900_000), "p99 {}", p.p99);
        assert_eq!(p.max, 10_000_000);
        assert_eq!(p.count, 10_000);
        for v in [1u64, 2, 7, 8, 9, 15, 16, 1000, 1 << 39, u64::MAX] {
            let b = CompactHistogram::bucket(v);
            assert!(CompactHistogram::bucket_low(b) <= v, "{v}");
        }
    }

    #[test]
    fn hdr_percentiles() {
        let mut h = LatencyHistogram::default();
        for v in 1..=100u64 {
            h.record(v * 1000);
        }
        let p = h.percentiles();
        // HDR reports the highest value equivalent to the sample at 3 significant digits.
        let close = |got: u64, want: u64| got >= want && got - want <= want / 1000;
        assert!(close(p.p50, 50_000) && close(p.p99, 99_000) && close(p.max, 100_000), "{p:?}");
        assert_eq!(p.count, 100);
    }
}
