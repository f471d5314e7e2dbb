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
    /// The value at quantile `q` (0..=1); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.0.is_empty() { 0 } else { self.0.value_at_quantile(q) }
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
/// 1 ns to 2^40 ns (≈18 min). The run-wide histogram uses the full-precision
/// `LatencyHistogram`; this one keeps per-task memory small: a task with few distinct
/// latencies (most tasks of a 10,000-task run wake a handful of times) keeps only its non-empty
/// buckets, 4 bytes each; the full 656-byte array is allocated once it has more than
/// `SPARSE_MAX` of them or a bucket's count no longer fits the sparse form.
#[derive(Clone, Debug, Default)]
pub struct CompactHistogram {
    counts: Counts,
    total: u64,
    max: u64,
}

#[derive(Clone, Debug)]
enum Counts {
    /// The non-empty buckets in increasing bucket order, each `bucket << 24 | count`
    /// (count < 2^24), so that the entries sort by bucket.
    Sparse(Vec<u32>),
    /// One u32 count per bucket (saturating).
    Dense(Box<[u32; CompactHistogram::BUCKETS]>),
}

impl Default for Counts {
    fn default() -> Self {
        Counts::Sparse(Vec::new())
    }
}

impl CompactHistogram {
    const SUB_BITS: u32 = 2;
    const OCTAVES: usize = 41;
    const BUCKETS: usize = Self::OCTAVES << Self::SUB_BITS;
    /// Sparse entries beyond which the dense array is smaller or as small once allocator
    /// rounding is counted (48 entries = 192 bytes of 656).
    const SPARSE_MAX: usize = 48;
    const COUNT_BITS: u32 = 24;
    const COUNT_MASK: u32 = (1 << Self::COUNT_BITS) - 1;

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

    /// The dense array holding the sparse entries' counts.
    fn densify(entries: &[u32]) -> Box<[u32; Self::BUCKETS]> {
        let mut d = Box::new([0; Self::BUCKETS]);
        for &e in entries {
            d[(e >> Self::COUNT_BITS) as usize] = e & Self::COUNT_MASK;
        }
        d
    }

    pub fn record(&mut self, ns: u64) {
        let b = Self::bucket(ns);
        self.total += 1;
        self.max = self.max.max(ns);
        match &mut self.counts {
            Counts::Dense(d) => d[b] = d[b].saturating_add(1),
            Counts::Sparse(v) => {
                let key = b as u32;
                match v.binary_search_by_key(&key, |e| e >> Self::COUNT_BITS) {
                    Ok(i) if v[i] & Self::COUNT_MASK < Self::COUNT_MASK => v[i] += 1,
                    Ok(_) => {
                        let mut d = Self::densify(v);
                        d[b] += 1;
                        self.counts = Counts::Dense(d);
                    }
                    Err(_) if v.len() >= Self::SPARSE_MAX => {
                        let mut d = Self::densify(v);
                        d[b] = 1;
                        self.counts = Counts::Dense(d);
                    }
                    Err(i) => {
                        // Grow by one entry at a time: most tasks stop at a few.
                        v.reserve_exact(1);
                        v.insert(i, key << Self::COUNT_BITS | 1);
                    }
                }
            }
        }
    }

    /// (bucket, count) of the non-empty buckets, in increasing bucket order.
    fn nonzero(&self) -> Box<dyn Iterator<Item = (usize, u32)> + '_> {
        match &self.counts {
            Counts::Sparse(v) => Box::new(v.iter().map(|&e| ((e >> Self::COUNT_BITS) as usize, e & Self::COUNT_MASK))),
            Counts::Dense(d) => Box::new(d.iter().copied().enumerate().filter(|&(_, c)| c > 0)),
        }
    }

    /// The value at quantile `q`: the low edge of the bucket holding it (exact below 8 ns).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        for (b, c) in self.nonzero() {
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

    /// The percentiles of a plain dense count array, the form the histogram had before it
    /// kept sparse buckets: both forms must answer alike.
    fn dense_reference(samples: &[u64], q: f64) -> u64 {
        let mut counts = [0u64; CompactHistogram::BUCKETS];
        for &s in samples {
            counts[CompactHistogram::bucket(s)] += 1;
        }
        let total = samples.len() as u64;
        let max = samples.iter().copied().max().unwrap_or(0);
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (b, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return CompactHistogram::bucket_low(b).min(max);
            }
        }
        max
    }

    #[test]
    fn sparse_and_dense_forms_agree_with_a_dense_array() {
        let mut rng = crate::rng::SimRng::new(7);
        // A few distinct buckets (sparse to the end), then many (dense from the 49th).
        for spread in [3u32, 12, 40] {
            let mut h = CompactHistogram::default();
            let mut samples = Vec::new();
            for i in 0..5_000 {
                let v = 1u64 << (rng.next_u64() % u64::from(spread)) | (rng.next_u64() & 0xff);
                h.record(v);
                samples.push(v);
                if i % 97 == 0 || i == 4_999 {
                    for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
                        assert_eq!(h.quantile(q), dense_reference(&samples, q), "spread {spread} i {i} q {q}");
                    }
                }
            }
            let dense = matches!(h.counts, Counts::Dense(_));
            assert_eq!(dense, spread == 40, "spread {spread}");
        }
    }

    #[test]
    fn a_sparse_count_that_outgrows_24_bits_moves_to_the_dense_form() {
        let mut h = CompactHistogram::default();
        h.record(10);
        for _ in 0..(1u32 << 24) {
            h.record(1000);
        }
        assert!(matches!(h.counts, Counts::Dense(_)));
        let Counts::Dense(d) = &h.counts else { unreachable!() };
        assert_eq!(d[CompactHistogram::bucket(1000)], 1 << 24);
        assert_eq!(d[CompactHistogram::bucket(10)], 1);
        assert_eq!(h.quantile(0.0), 10);
        assert_eq!(h.quantile(0.5), CompactHistogram::bucket_low(CompactHistogram::bucket(1000)));
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
