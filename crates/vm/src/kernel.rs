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

/// The image and the config in an extracted kernel package: `boot/vmlinuz-*` and
/// `boot/config-*` (Debian's `linux-image-*` up to 6.x), or `usr/lib/modules/*/vmlinuz` and
/// `usr/lib/modules/*/config` (the 7.x split: the image in `linux-binary-*`, the config in its
/// `linux-base-*`).
fn find_kernel_files(root: &Path) -> (Option<PathBuf>, Option<PathBuf>) {
    let entries = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> =
            std::fs::read_dir(dir).map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
        v.sort();
        v
    };
    let boot = entries(&root.join("boot"));
    let prefixed = |prefix: &str| {
        boot.iter().find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix))).cloned()
    };
    let modules = entries(&root.join("usr/lib/modules"));
    let in_modules = |file: &str| modules.iter().map(|d| d.join(file)).find(|p| p.is_file());
    (prefixed("vmlinuz-").or_else(|| in_modules("vmlinuz")), prefixed("config-").or_else(|| in_modules("config")))
}

/// `apt-get download NAME` and `dpkg-deb -x` into `tmp/x-NAME`, which it returns.
fn download_extract(name: &str, tmp: &Path) -> Result<PathBuf, VmError> {
    let dl = tmp.join(format!("dl-{name}"));
    std::fs::create_dir_all(&dl).map_err(|e| VmError::System(format!("{}: {e}", dl.display())))?;
    let out =
        Command::new("apt-get").arg("download").arg(name).current_dir(&dl).output().map_err(|e| {
            VmError::System(format!("apt-get download {name}: {e} (is this a Debian system with apt?)"))
        })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
        return Err(VmError::Usage(format!(
            "--kernel-pkg {name}: apt-get download failed: {last} (find the name with `apt-cache search linux-image`)"
        )));
    }
    let deb = std::fs::read_dir(&dl)
        .map_err(|e| VmError::System(format!("{}: {e}", dl.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| VmError::System(format!("apt-get download {name} left no .deb")))?;
    let root = tmp.join(format!("x-{name}"));
    let st = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&root)
        .status()
        .map_err(|e| VmError::System(format!("dpkg-deb: {e}")))?;
    if !st.success() {
        return Err(VmError::System(format!("dpkg-deb -x {} failed ({st})", deb.display())));
    }
    Ok(root)
}

/// Fetches package `name` into a temporary directory and copies its image and config
/// ([`find_kernel_files`]) into `dest`; a 7.x `linux-binary-*` package without a config has it
/// fetched from its `linux-base-*` (without it HZ and the preemption model are unknown, as for
/// a user's image). The temporary directory (the .debs and the modules) is removed on return.
fn fetch_package(name: &str, dest: &Path) -> Result<(), VmError> {
    let tmp = crate::cleanup::TempDir::new("kernel")?;
    let root = download_extract(name, tmp.path())?;
    let (vmlinuz, mut config) = find_kernel_files(&root);
    let Some(vmlinuz) = vmlinuz else {
        return Err(VmError::Usage(format!(
            "--kernel-pkg {name}: the package has no /boot/vmlinuz-* or /usr/lib/modules/*/vmlinuz (a meta or -dbg package? try the -unsigned or signed image package)"
        )));
    };
    if config.is_none()
        && let Some(version) = name.strip_prefix("linux-binary-")
        && let Ok(base) = download_extract(&format!("linux-base-{version}"), tmp.path())
    {
        config = find_kernel_files(&base).1;
    }
    std::fs::create_dir_all(dest).map_err(|e| VmError::System(format!("{}: {e}", dest.display())))?;
    let copy = |from: &Path, to: &str| {
        // Copy to a temporary name and rename, so an interrupted fetch never leaves a
        // truncated image that a later run would boot.
        let part = dest.join(format!("{to}.part"));
        std::fs::copy(from, &part)
            .and_then(|_| std::fs::rename(&part, dest.join(to)))
            .map_err(|e| VmError::System(format!("{}: {e}", dest.join(to).display())))
    };
    if let Some(cfg) = &config {
        copy(cfg, "config")?;
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
    fn both_package_layouts_give_image_and_config() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old");
        std::fs::create_dir_all(old.join("boot")).unwrap();
        for f in ["vmlinuz-6.12.117+deb13-amd64", "config-6.12.117+deb13-amd64", "System.map-6.12.117+deb13-amd64"] {
            std::fs::write(old.join("boot").join(f), "x").unwrap();
        }
        let (v, c) = find_kernel_files(&old);
        assert!(v.unwrap().ends_with("boot/vmlinuz-6.12.117+deb13-amd64"));
        assert!(c.unwrap().ends_with("boot/config-6.12.117+deb13-amd64"));
        let new = dir.path().join("new");
        let m = new.join("usr/lib/modules/7.3.4+deb13-amd64");
        std::fs::create_dir_all(&m).unwrap();
        std::fs::write(m.join("vmlinuz"), "x").unwrap();
        let (v, c) = find_kernel_files(&new);
        assert!(v.unwrap().ends_with("usr/lib/modules/7.3.4+deb13-amd64/vmlinuz"));
        assert!(c.is_none(), "7.x: the config is in linux-base-*");
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
