//! The initramfs archive format: cpio "newc" (the kernel's `usr/gen_init_cpio` writes the same;
//! the format is documented in the kernel's `Documentation/driver-api/early-userspace/buffer-format.rst`).
//!
//! Every header is 110 ASCII bytes (magic `070701` and thirteen 8-digit hex fields), then the
//! NUL-terminated name, padded to 4 bytes, then the data, padded to 4 bytes; the archive ends
//! with an entry named `TRAILER!!!`.

use std::io::{self, Write};

/// File type bits of `st_mode`.
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

/// Writes a newc archive to `out`. Inode numbers are assigned in order, so the same entries
/// give byte-identical archives (mtime is always 0).
pub struct CpioWriter<W: Write> {
    out: W,
    ino: u32,
    written: u64,
}

impl<W: Write> CpioWriter<W> {
    pub fn new(out: W) -> Self {
        CpioWriter { out, ino: 1, written: 0 }
    }

    pub fn dir(&mut self, name: &str) -> io::Result<()> {
        self.entry(name, S_IFDIR | 0o755, 2, &[])
    }

    pub fn file(&mut self, name: &str, mode: u32, data: &[u8]) -> io::Result<()> {
        self.entry(name, S_IFREG | (mode & 0o7777), 1, data)
    }

    pub fn symlink(&mut self, name: &str, target: &str) -> io::Result<()> {
        self.entry(name, S_IFLNK | 0o777, 1, target.as_bytes())
    }

    /// Writes the trailer and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.entry("TRAILER!!!", 0, 1, &[])?;
        Ok(self.out)
    }

    fn entry(&mut self, name: &str, mode: u32, nlink: u32, data: &[u8]) -> io::Result<()> {
        // Names are stored without the leading '/', as gen_init_cpio does.
        let name = name.trim_start_matches('/');
        let ino = if name == "TRAILER!!!" { 0 } else { self.ino };
        self.ino += 1;
        let size = u32::try_from(data.len()).map_err(|_| io::Error::other(format!("{name}: larger than 4 GiB")))?;
        let header = format!(
            "070701{ino:08x}{mode:08x}{uid:08x}{gid:08x}{nlink:08x}{mtime:08x}{size:08x}{dmaj:08x}{dmin:08x}{rmaj:08x}{rmin:08x}{namesize:08x}{check:08x}",
            uid = 0,
            gid = 0,
            mtime = 0,
            dmaj = 0,
            dmin = 0,
            rmaj = 0,
            rmin = 0,
            namesize = name.len() + 1,
            check = 0,
        );
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - (self.written % 4) as usize) % 4;
        self.put(&[0u8; 3][..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses a newc archive back into (name, mode, data): the reader the kernel's
    /// `init/initramfs.c` implements, restated for the test.
    fn parse(mut b: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut out = vec![];
        let mut off = 0usize;
        loop {
            assert_eq!(&b[..6], b"070701", "magic at offset {off}");
            let field =
                |i: usize| u32::from_str_radix(std::str::from_utf8(&b[6 + 8 * i..14 + 8 * i]).unwrap(), 16).unwrap();
            let mode = field(1);
            let size = field(6) as usize;
            let namesize = field(11) as usize;
            let name = String::from_utf8(b[110..110 + namesize - 1].to_vec()).unwrap();
            assert_eq!(b[110 + namesize - 1], 0);
            let data_start = (110 + namesize).div_ceil(4) * 4;
            let data = b[data_start..data_start + size].to_vec();
            let next = (data_start + size).div_ceil(4) * 4;
            if name == "TRAILER!!!" {
                assert_eq!(next, b.len(), "nothing after the trailer");
                return out;
            }
            out.push((name, mode, data));
            off += next;
            b = &b[next..];
        }
    }

    #[test]
    fn entries_round_trip_with_alignment() {
        let mut w = CpioWriter::new(Vec::new());
        w.dir("/bin").unwrap();
        w.file("/bin/busybox", 0o755, b"abcde").unwrap();
        w.symlink("/bin/sh", "busybox").unwrap();
        w.file("/init", 0o755, b"#!/bin/sh\n").unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len() % 4, 0);
        let e = parse(&bytes);
        let names: Vec<&str> = e.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(names, ["bin", "bin/busybox", "bin/sh", "init"]);
        assert_eq!(e[0].1, 0o040755);
        assert_eq!(e[1].1, 0o100755);
        assert_eq!(e[1].2, b"abcde");
        assert_eq!(e[2].1, 0o120777);
        assert_eq!(e[2].2, b"busybox");
        assert_eq!(e[3].2, b"#!/bin/sh\n");
    }
}
