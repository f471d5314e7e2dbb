//! The guest kernel: a Debian kernel package fetched with `apt-get download` (only `vmlinuz`
//! and its `config` are kept, in a cache directory), or a user's `bzImage`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::VmError;

/// Where the guest kernel comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelSource {
    /// A Debian binary package, e.g. `linux-image-6.12.117+deb13-amd64`.
    DebianPackage(String),
    /// A bootable image (`bzImage` or a distribution's `vmlinuz`) on the host.
    Image(PathBuf),
}

impl KernelSource {
    /// `--vm KERNEL` (and a plan's `vm`): a path (it has a `/` or names a file) is a kernel
    /// image, anything else a Debian package name.
    pub fn from_arg(arg: &str) -> KernelSource {
        if arg.contains('/') || Path::new(arg).is_file() {
            KernelSource::Image(PathBuf::from(arg))
        } else {
            KernelSource::DebianPackage(arg.to_string())
        }
    }

    /// What reports and stored runs call the kernel: the package name or the image path, as
    /// [`resolve`] labels it (known before anything is fetched).
    pub fn label(&self) -> String {
        match self {
            KernelSource::Image(p) => p.display().to_string(),
            KernelSource::DebianPackage(name) => name.clone(),
        }
    }
}

/// A kernel ready to boot.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub image: PathBuf,
    /// The build configuration when known (a Debian package ships it as `/boot/config-*`).
    pub config: Option<PathBuf>,
    /// A label for reports: the package name or the image path.
    pub label: String,
}

impl Kernel {
    /// `CONFIG_HZ` and the built-in preemption model, from the config when there is one.
    pub fn sched_config(&self) -> (Option<u32>, Option<&'static str>) {
        let Some(text) = self.config.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) else {
            return (None, None);
        };
        let hz = text.lines().find_map(|l| l.strip_prefix("CONFIG_HZ=")).and_then(|v| v.trim().parse().ok());
        let preempt = if text.lines().any(|l| l == "CONFIG_PREEMPT_LAZY=y") {
            Some("lazy")
        } else if text.lines().any(|l| l == "CONFIG_PREEMPT=y") {
            Some("full")
        } else if text.lines().any(|l| l == "CONFIG_PREEMPT_VOLUNTARY=y") {
            Some("voluntary")
        } else if text.lines().any(|l| l == "CONFIG_PREEMPT_NONE=y") {
            Some("none")
        } else {
            None
        };
        (hz, preempt)
    }
}

/// `$XDG_CACHE_HOME/schedlab/kernels`, else `~/.cache/schedlab/kernels`.
pub fn cache_dir() -> Result<PathBuf, VmError> {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return Ok(PathBuf::from(x).join("schedlab/kernels"));
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".cache/schedlab/kernels")),
        None => Err(VmError::System("neither XDG_CACHE_HOME nor HOME is set: no kernel cache directory".into())),
    }
}

/// A package name apt accepts: Debian policy's characters only, so it cannot be read as an
/// option or reach a shell.
fn valid_package_name(name: &str) -> bool {
    name.len() >= 2
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c))
}

/// Resolves `src` to a bootable kernel, downloading and caching a package on first use.
pub fn resolve(src: &KernelSource) -> Result<Kernel, VmError> {
    match src {
        KernelSource::Image(p) => {
            if !p.is_file() {
                return Err(VmError::Usage(format!("kernel image {}: no such file", p.display())));
            }
            Ok(Kernel { image: p.clone(), config: None, label: p.display().to_string() })
        }
        KernelSource::DebianPackage(name) => {
            if !valid_package_name(name) {
                return Err(VmError::Usage(format!("kernel package {name:?}: not a Debian package name")));
            }
            let dir = cache_dir()?.join(name);
            let image = dir.join("vmlinuz");
            let config = dir.join("config");
            if !image.is_file() {
                fetch_package(name, &dir)?;
            }
            Ok(Kernel { image, config: config.is_file().then_some(config), label: name.clone() })
        }
    }
}

/// `apt-get download NAME` into a temporary directory, `dpkg-deb -x` there, then copies
/// `boot/vmlinuz-*` and `boot/config-*` into `dest`; the temporary directory (the .deb and its
/// modules) is removed on return.
fn fetch_package(name: &str, dest: &Path) -> Result<(), VmError> {
    let tmp = crate::cleanup::TempDir::new("kernel")?;
    let out =
        Command::new("apt-get").arg("download").arg(name).current_dir(tmp.path()).output().map_err(|e| {
            VmError::System(format!("apt-get download {name}: {e} (is this a Debian system with apt?)"))
        })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
        return Err(VmError::Usage(format!(
            "--kernel-pkg {name}: apt-get download failed: {last} (find the name with `apt-cache search linux-image`)"
        )));
    }
    let deb = std::fs::read_dir(tmp.path())
        .map_err(|e| VmError::System(format!("{}: {e}", tmp.path().display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| VmError::System(format!("apt-get download {name} left no .deb")))?;
    let root = tmp.path().join("x");
    let st = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&root)
        .status()
        .map_err(|e| VmError::System(format!("dpkg-deb: {e}")))?;
    if !st.success() {
        return Err(VmError::System(format!("dpkg-deb -x {} failed ({st})", deb.display())));
    }
    let boot = root.join("boot");
    let find = |prefix: &str| -> Option<PathBuf> {
        std::fs::read_dir(&boot)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix)))
    };
    let Some(vmlinuz) = find("vmlinuz-") else {
        return Err(VmError::Usage(format!(
            "--kernel-pkg {name}: the package has no /boot/vmlinuz-* (a meta or -dbg package? try the -unsigned or signed image package)"
        )));
    };
    std::fs::create_dir_all(dest).map_err(|e| VmError::System(format!("{}: {e}", dest.display())))?;
    let copy = |from: &Path, to: &str| {
        // Copy to a temporary name and rename, so an interrupted fetch never leaves a
        // truncated image that a later run would boot.
        let part = dest.join(format!("{to}.part"));
        std::fs::copy(from, &part)
            .and_then(|_| std::fs::rename(&part, dest.join(to)))
            .map_err(|e| VmError::System(format!("{}: {e}", dest.join(to).display())))
    };
    if let Some(cfg) = find("config-") {
        copy(&cfg, "config")?;
    }
    copy(&vmlinuz, "vmlinuz")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_are_checked() {
        assert!(valid_package_name("linux-image-6.12.117+deb13-amd64"));
        assert!(!valid_package_name("-o=foo"));
        assert!(!valid_package_name("linux image"));
        assert!(!valid_package_name("a;rm"));
    }

    #[test]
    fn config_gives_hz_and_preempt() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config");
        std::fs::write(
            &cfg,
            "CONFIG_HZ_250=y\nCONFIG_HZ=250\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_VOLUNTARY=y\n",
        )
        .unwrap();
        let k = Kernel { image: cfg.clone(), config: Some(cfg), label: "t".into() };
        assert_eq!(k.sched_config(), (Some(250), Some("voluntary")));
    }
}
