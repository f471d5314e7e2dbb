//! The initramfs, built on the host: a static busybox, the `schedlab` binary itself and the
//! real benchmark tools the host has, each with the shared libraries it links (from `ldd`), at
//! their host paths, built once per command; and per boot the guest `/init`
//! ([`crate::guest::init_script`]) appended as a second archive.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::VmError;
use crate::cpio::CpioWriter;

/// busybox applets the guest script uses.
const APPLETS: &[&str] = &[
    "sh", "mount", "cat", "echo", "grep", "tr", "sed", "uname", "poweroff", "sleep", "ls", "dmesg", "gzip", "base64",
    "ip",
];

/// Host tools `schedlab native` drives when installed (crates/native/src/tools.rs), put in the
/// guest at the same path. Only rt-tests `hackbench` in this slice.
const TOOLS: &[&str] = &["/usr/bin/hackbench"];

/// Whether an ELF file has no program interpreter (PT_INTERP), i.e. is statically linked.
/// Reads the ELF64 little-endian header and program headers (`elf(5)`).
pub fn is_static_elf(bytes: &[u8]) -> bool {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return false;
    }
    let u16at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let mut phoff8 = [0u8; 8];
    phoff8.copy_from_slice(&bytes[0x20..0x28]);
    let phoff = u64::from_le_bytes(phoff8) as usize;
    let (phentsize, phnum) = (u16at(0x36), u16at(0x38));
    (0..phnum).all(|i| {
        let o = phoff + i * phentsize;
        // PT_INTERP = 3
        bytes.get(o..o + 4).is_some_and(|t| u32::from_le_bytes([t[0], t[1], t[2], t[3]]) != 3)
    })
}

/// The static busybox: Debian's `busybox-static` installs it as /bin/busybox (the dynamic
/// `busybox` package uses the same path, hence the ELF check).
fn find_static_busybox() -> Result<PathBuf, VmError> {
    for p in ["/bin/busybox", "/usr/bin/busybox"] {
        if let Ok(b) = std::fs::read(p)
            && is_static_elf(&b)
        {
            return Ok(PathBuf::from(p));
        }
    }
    Err(VmError::Usage(
        "no statically linked busybox on this machine (the guest's shell): install it with `apt-get install busybox-static`".into(),
    ))
}

/// The shared objects `bin` loads, from `ldd` (absolute paths only; the vDSO has none).
pub fn parse_ldd(text: &str) -> Vec<PathBuf> {
    let mut out = vec![];
    for line in text.lines() {
        let line = line.trim();
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.split_whitespace().next().unwrap_or(""),
            None => line.split_whitespace().next().unwrap_or(""),
        };
        if path.starts_with('/') {
            out.push(PathBuf::from(path));
        }
    }
    out
}

fn libraries(bin: &Path) -> Result<Vec<PathBuf>, VmError> {
    let out =
        Command::new("ldd").arg(bin).output().map_err(|e| VmError::System(format!("ldd {}: {e}", bin.display())))?;
    // ldd exits 1 for a static binary ("not a dynamic executable"): no libraries.
    Ok(parse_ldd(&String::from_utf8_lossy(&out.stdout)))
}

/// The archive under construction: parent directories are created once, before their files.
struct Image<W: Write> {
    cpio: CpioWriter<W>,
    dirs: BTreeSet<String>,
    files: BTreeSet<String>,
}

impl<W: Write> Image<W> {
    fn parents(&mut self, path: &str) -> Result<(), VmError> {
        let mut acc = String::new();
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        for part in &parts[..parts.len() - 1] {
            acc.push('/');
            acc.push_str(part);
            if self.dirs.insert(acc.clone()) {
                self.cpio.dir(&acc).map_err(io)?;
            }
        }
        Ok(())
    }

    fn dir(&mut self, path: &str) -> Result<(), VmError> {
        self.parents(&format!("{path}/x"))
    }

    fn data(&mut self, path: &str, mode: u32, data: &[u8]) -> Result<(), VmError> {
        if !self.files.insert(path.to_string()) {
            return Ok(());
        }
        self.parents(path)?;
        self.cpio.file(path, mode, data).map_err(io)
    }

    /// A host file at guest path `to` (symlinks followed: the guest gets the contents).
    fn host_file(&mut self, from: &Path, to: &str) -> Result<(), VmError> {
        let data = std::fs::read(from).map_err(|e| VmError::System(format!("{}: {e}", from.display())))?;
        self.data(to, 0o755, &data)
    }

    /// A host binary at `to` with every library it links, at the libraries' host paths.
    fn binary(&mut self, from: &Path, to: &str) -> Result<(), VmError> {
        self.host_file(from, to)?;
        for lib in libraries(from)? {
            let s = lib.to_string_lossy().into_owned();
            self.host_file(&lib, &s)?;
        }
        Ok(())
    }

    fn symlink(&mut self, path: &str, target: &str) -> Result<(), VmError> {
        self.parents(path)?;
        self.cpio.symlink(path, target).map_err(io)
    }
}

fn io(e: std::io::Error) -> VmError {
    VmError::System(format!("writing the initramfs: {e}"))
}

/// What went into an initramfs.
#[derive(Debug)]
pub struct Built {
    pub path: PathBuf,
    pub bytes: u64,
    /// The host tools included (those installed).
    pub tools: Vec<String>,
}

/// Writes `dir/base.cpio.gz`: busybox, `schedlab` (the binary at `schedlab_bin`) and the
/// installed [`TOOLS`], with their libraries; no `/init` ([`with_init`] adds one per boot).
pub fn build(dir: &Path, schedlab_bin: &Path) -> Result<Built, VmError> {
    let busybox = find_static_busybox()?;
    let path = dir.join("base.cpio.gz");
    let file = std::fs::File::create(&path).map_err(|e| VmError::System(format!("{}: {e}", path.display())))?;
    // The fast level: the schedlab binary dominates the archive, and the guest inflates it
    // under emulation, where a smaller archive barely pays for itself.
    let gz = GzEncoder::new(std::io::BufWriter::new(file), Compression::fast());
    let mut img = Image { cpio: CpioWriter::new(gz), dirs: BTreeSet::new(), files: BTreeSet::new() };
    for d in ["/proc", "/sys", "/dev", "/tmp", "/usr/bin"] {
        img.dir(d)?;
    }
    img.host_file(&busybox, "/bin/busybox")?;
    for a in APPLETS {
        img.symlink(&format!("/bin/{a}"), "busybox")?;
    }
    img.binary(schedlab_bin, "/bin/schedlab")?;
    let mut tools = vec![];
    for t in TOOLS {
        if Path::new(t).is_file() {
            img.binary(Path::new(t), t)?;
            tools.push(t.to_string());
        }
    }
    let gz = img.cpio.finish().map_err(io)?;
    gz.finish().map_err(io)?.flush().map_err(io)?;
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok(Built { path, bytes, tools })
}

/// Writes `out`: the base archive followed by a second gzip'd cpio archive holding only
/// `/init`. The kernel unpacks concatenated archives in order (`unpack_to_rootfs` in
/// `init/initramfs.c` loops over the buffer), so one base serves every boot of a command and
/// only the small script differs.
pub fn with_init(base: &Built, init: &str, out: &Path) -> Result<u64, VmError> {
    std::fs::copy(&base.path, out).map_err(|e| VmError::System(format!("{}: {e}", out.display())))?;
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(out)
        .map_err(|e| VmError::System(format!("{}: {e}", out.display())))?;
    let mut cpio = CpioWriter::new(GzEncoder::new(std::io::BufWriter::new(file), Compression::fast()));
    cpio.file("/init", 0o755, init.as_bytes()).map_err(io)?;
    cpio.finish().map_err(io)?.finish().map_err(io)?.flush().map_err(io)?;
    Ok(std::fs::metadata(out).map(|m| m.len()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_lines_give_paths() {
        let t = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f5)\n";
        assert_eq!(
            parse_ldd(t),
            [PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"), PathBuf::from("/lib64/ld-linux-x86-64.so.2")]
        );
    }

    #[test]
    fn this_test_binary_is_dynamic() {
        // Rust test binaries link libc dynamically on Debian: a PT_INTERP must be found.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(!is_static_elf(&me));
        assert!(!is_static_elf(b"#!/bin/sh\n"));
    }
}
