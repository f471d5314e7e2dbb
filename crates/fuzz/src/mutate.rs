//! Byte-level mutation of real inputs: flips, insertions of boundary numbers and dictionary
//! tokens, deletions, duplications and splices with other corpus entries.

use crate::rng::{BOUNDARIES, ODD_NUMBERS, Rng};

/// Largest input a mutation grows to.
const MAX_LEN: usize = 1 << 16;

/// One to eight mutations of `base`.
pub fn mutate(rng: &mut Rng, base: &[u8], corpus: &[Vec<u8>], dictionary: &[&str]) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..rng.range(1, 8) {
        let at = rng.below(v.len() + 1);
        match rng.below(9) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.u64() as u8;
            }
            2 => insert(&mut v, at, rng.pick(BOUNDARIES).as_bytes()),
            3 => insert(&mut v, at, rng.pick(ODD_NUMBERS).as_bytes()),
            4 if !dictionary.is_empty() => insert(&mut v, at, rng.pick(dictionary).as_bytes()),
            5 if !v.is_empty() => {
                let len = rng.range(1, 64.min(v.len()) as u64) as usize;
                let start = rng.below(v.len() - len + 1);
                v.drain(start..start + len);
            }
            6 if !v.is_empty() => {
                let len = rng.range(1, 256.min(v.len()) as u64) as usize;
                let start = rng.below(v.len() - len + 1);
                let chunk = v[start..start + len].to_vec();
                insert(&mut v, at, &chunk);
            }
            7 if !corpus.is_empty() => {
                let other = rng.pick(corpus);
                if !other.is_empty() {
                    let start = rng.below(other.len());
                    let len = rng.range(1, (other.len() - start).min(512) as u64) as usize;
                    insert(&mut v, at, &other[start..start + len]);
                }
            }
            _ => {
                // Replace a run of digits with a boundary number: the most productive edit.
                if let Some(i) = (at..v.len()).find(|&i| v[i].is_ascii_digit()) {
                    let end = (i..v.len()).find(|&j| !v[j].is_ascii_digit()).unwrap_or(v.len());
                    let n = rng.pick(BOUNDARIES).as_bytes().to_vec();
                    v.splice(i..end, n);
                }
            }
        }
        v.truncate(MAX_LEN);
    }
    v
}

fn insert(v: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    let at = at.min(v.len());
    v.splice(at..at, bytes.iter().copied());
}
