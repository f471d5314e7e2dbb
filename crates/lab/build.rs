//! The model revision: a hash of the sources that decide what a simulated run gives (the
//! simulator, the workload and machine parsers, the run resolver), which the results store
//! keys model runs by, so that a model change never reuses the runs of an older model.

use std::path::{Path, PathBuf};

/// 64-bit FNV-1a.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The `.rs` files under `dir`, sorted, test-only files left out.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name != "tests.rs" && !name.ends_with("_tests.rs") {
                out.push(p);
            }
        }
    }
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let roots = ["../sim/src", "../workload/src", "../machine/src", "src/runner.rs"];
    let mut files = Vec::new();
    for r in roots {
        let p = here.join(r);
        println!("cargo:rerun-if-changed={}", p.display());
        if p.is_dir() { sources(&p, &mut files) } else { files.push(p) }
    }
    let mut h = 0xcbf2_9ce4_8422_2325;
    for f in &files {
        let rel = f.strip_prefix(&here).unwrap_or(f);
        h = fnv(h, rel.to_string_lossy().as_bytes());
        h = fnv(h, &[0]);
        h = fnv(h, &std::fs::read(f).unwrap_or_default());
        h = fnv(h, &[0]);
    }
    println!("cargo:rustc-env=SCHEDLAB_MODEL_REVISION={h:016x}");
}
