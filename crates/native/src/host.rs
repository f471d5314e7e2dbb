//! Facts about the host kernel: which simulator preset its release is closest to
//! (`--kernel host`), and the system-wide counters native mode samples around a run (idle time
//! per CPU from cpuidle, rescheduling IPIs from `/proc/interrupts`).

use std::path::Path;

/// A kernel release mapped onto a simulator preset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMatch {
    /// The release as read (`uname -r`).
    pub release: String,
    /// The version part that was compared, e.g. `6.18` or `6.19-rc3`.
    pub version: String,
    /// The chosen preset (one of the names given).
    pub preset: &'static str,
    /// The release is exactly the preset's version (any stable point release of it counts).
    pub exact: bool,
}

impl KernelMatch {
    /// A one-line note for stderr when the match is approximate.
    pub fn note(&self) -> Option<String> {
        (!self.exact).then(|| {
            format!(
                "--kernel host: this kernel is {} ({}); no preset for it, using the nearest, {}",
                self.version, self.release, self.preset
            )
        })
    }
}

/// `(ordinal, rc)`: releases ordered on one line (a major holds at most 20 minors: 3.19, 4.20,
/// 5.19 and 6.19 were the last of theirs), an `-rcN` just before its release.
fn version_key(text: &str) -> Option<(u32, Option<u32>)> {
    let text = text.trim().trim_start_matches('v');
    let mut it = text.splitn(3, ['.', '-']);
    let major: u32 = it.next()?.parse().ok()?;
    let minor_part = it.next()?;
    let minor: u32 = minor_part.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()?;
    let rest = it.next().unwrap_or("");
    // The rc tag follows the minor directly (`6.19-rc6`) or after a `.0` (`6.19.0-rc6`).
    let rc = rest.split(['-', '.']).find_map(|t| t.strip_prefix("rc").and_then(|n| n.parse::<u32>().ok()));
    Some((major * 20 + minor, rc))
}

/// The third number of `major.minor.patch`, if the text has one.
fn patch_level(text: &str) -> Option<u32> {
    let dotted = text.trim().trim_start_matches('v').split('-').next()?;
    let third = dotted.split('.').nth(2)?;
    let digits: String = third.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Maps a kernel release string (`uname -r`, e.g. `6.18.44-fc-v595`) onto the nearest of
/// `presets` (names such as `v6.18`, `v6.19-rc6`). Exact: same major.minor and, for an `-rc`
/// preset, the same rc. Otherwise the nearest by version distance, ties going to the newer
/// preset (a preset stands for the changes merged up to its version). Pure.
pub fn preset_for_release(release: &str, presets: &[&'static str]) -> Result<KernelMatch, String> {
    let (ord, rc) =
        version_key(release).ok_or_else(|| format!("cannot read a version in kernel release `{release}`"))?;
    let version = match rc {
        Some(n) => format!("{}.{}-rc{n}", ord / 20, ord % 20),
        None => format!("{}.{}", ord / 20, ord % 20),
    };
    // Half-steps: a release is 2·ord, any rc of it 2·ord − 1.
    let pos = |o: u32, rc: Option<u32>| i64::from(o) * 2 - i64::from(rc.is_some());
    let here = pos(ord, rc);
    let mut best: Option<(i64, i64, &'static str, bool)> = None;
    for &name in presets {
        let Some((po, prc)) = version_key(name) else { continue };
        // A preset naming a patch level (`v6.12.0`, upstream before the stable backports)
        // stands for that release only; a series' other releases map to the series' preset.
        // It also beats the series' preset when the release is exactly it.
        let level = patch_level(name);
        if level.is_some() && patch_level(release) != level {
            continue;
        }
        let there = pos(po, prc);
        let exact = po == ord && prc == rc;
        if exact && level.is_some() {
            best = Some((0, there, name, true));
            break;
        }
        let dist = (there - here).abs();
        let better = match best {
            None => true,
            Some((bd, bpos, _, bexact)) => {
                (exact && !bexact) || (!bexact && (dist < bd || (dist == bd && there > bpos)))
            }
        };
        if better {
            best = Some((dist, there, name, exact));
        }
    }
    let (_, _, preset, exact) = best.ok_or("no kernel presets to choose from")?;
    Ok(KernelMatch { release: release.trim().to_string(), version, preset, exact })
}

/// The host kernel's release (`/proc/sys/kernel/osrelease`, what `uname -r` prints).
pub fn host_release() -> Result<String, String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("/proc/sys/kernel/osrelease: {e}"))
}

/// `--kernel host`: the simulator preset nearest to the running kernel.
pub fn host_kernel_preset() -> Result<KernelMatch, String> {
    let names: Vec<&'static str> = sim::kernel::KERNELS.iter().map(|k| k.name).collect();
    preset_for_release(&host_release()?, &names)
}

/// The model's configuration for a kernel: the preset nearest to `release`, with `hz` and the
/// preemption model in force when they are known (`--kernel host` on this machine, the guest's
/// kernel for `validate --vm`). The notes say what was approximated (for stderr). Pure.
pub fn model_config(
    release: &str,
    hz: Option<u32>,
    preempt: Option<&str>,
) -> Result<(sim::config::SchedConfig, KernelMatch, Vec<String>), String> {
    let names: Vec<&'static str> = sim::kernel::KERNELS.iter().map(|k| k.name).collect();
    let m = preset_for_release(release, &names)?;
    let mut notes: Vec<String> = m.note().into_iter().collect();
    let Some(preset) = sim::kernel::preset(m.preset) else {
        return Err(format!("release {release} maps to preset `{}`, which is not in the preset table", m.preset));
    };
    let mut cfg = preset.config();
    if let Some(hz) = hz {
        cfg.hz = hz;
    }
    if let Some(p) = preempt {
        match sim::config::PreemptModel::parse(p) {
            Some(model) => cfg.preempt = model,
            None => notes.push(format!("--kernel host: preemption model `{p}` is not modelled; using the preset's")),
        }
    }
    Ok((cfg, m, notes))
}

/// `--kernel host` for every command that builds a simulated kernel: the preset nearest to this
/// machine's kernel, with the host's HZ and preemption model when they can be read and its
/// `sched_autogroup_enabled`; and the notes to show (the preset is not exact, a preemption model
/// the model lacks, scheduler sysctls of a vendor patch). The error says why the host kernel cannot be mapped.
pub fn host_kernel_config() -> Result<(sim::config::SchedConfig, Vec<String>), String> {
    let h = host_sched();
    let release = host_release()?;
    let (mut cfg, _, mut notes) = model_config(&release, h.hz, h.preempt.as_deref())?;
    cfg.sysctl.autogroup = autogroup_enabled();
    notes.extend(vendor_sysctl_note(&host_vendor_sched_sysctls()).map(|n| format!("--kernel host: {n}")));
    Ok((cfg, notes))
}

/// The host kernel's scheduler build options, from `/proc/config.gz` and the command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostSched {
    /// `CONFIG_HZ`.
    pub hz: Option<u32>,
    /// The preemption model in force: `preempt=` on the command line, else the build's
    /// `CONFIG_PREEMPT_{NONE,VOLUNTARY,FULL,LAZY,RT}` default (`PREEMPT_DYNAMIC` boots with it).
    pub preempt: Option<String>,
    /// Where each value came from, or why it is unknown.
    pub notes: Vec<String>,
}

/// Reads `CONFIG_HZ` and the preemption model from a kernel config text and a command line.
/// Pure.
pub fn parse_host_sched(config: Option<&str>, cmdline: &str) -> HostSched {
    let mut h = HostSched::default();
    if let Some(cfg) = config {
        for line in cfg.lines() {
            if let Some(v) = line.strip_prefix("CONFIG_HZ=") {
                h.hz = v.trim().parse().ok();
            }
            for (key, model) in [
                ("CONFIG_PREEMPT_NONE=y", "none"),
                ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
                ("CONFIG_PREEMPT=y", "full"),
                ("CONFIG_PREEMPT_LAZY=y", "lazy"),
                ("CONFIG_PREEMPT_RT=y", "full"),
            ] {
                if line.trim() == key {
                    h.preempt = Some(model.to_string());
                }
            }
        }
        if h.hz.is_some() {
            h.notes.push("hz from CONFIG_HZ".into());
        }
        if h.preempt.is_some() {
            h.notes.push("preempt from the CONFIG_PREEMPT_* build default".into());
        }
    } else {
        h.notes.push("no /proc/config.gz: hz and preempt are the preset's".into());
    }
    if let Some(p) = cmdline.split_whitespace().find_map(|t| t.strip_prefix("preempt=")) {
        h.preempt = Some(p.to_string());
        h.notes.push("preempt from the kernel command line".into());
    }
    h
}

/// [`parse_host_sched`] on this machine (`/proc/config.gz`, `/proc/cmdline`); the debugfs
/// `sched/preempt` file wins when it is readable (it shows the model in force, `(none)`).
pub fn host_sched() -> HostSched {
    let config = std::fs::File::open("/proc/config.gz").ok().and_then(|f| {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(f), &mut s).ok().map(|_| s)
    });
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let mut h = parse_host_sched(config.as_deref(), &cmdline);
    for dir in ["/sys/kernel/debug/sched/preempt"] {
        if let Some(text) = read_trimmed(Path::new(dir))
            && let Some(start) = text.find('(')
            && let Some(end) = text[start..].find(')')
        {
            h.preempt = Some(text[start + 1..start + end].to_string());
            h.notes.push("preempt from debugfs sched/preempt".into());
        }
    }
    h
}

/// The scheduler sysctls of upstream Linux under `/proc/sys/kernel` (the `procname`s of
/// kernel/sched/*.c, 7.3.4; the CFS tunables moved to debugfs in 5.13, `sched_child_runs_first`
/// went in 6.6, x86's `sched_itmt_enabled` moved to debugfs in 6.14).
const UPSTREAM_SCHED_SYSCTLS: &[&str] = &[
    "sched_autogroup_enabled",
    "sched_cfs_bandwidth_slice_us",
    "sched_child_runs_first",
    "sched_deadline_period_max_us",
    "sched_deadline_period_min_us",
    "sched_energy_aware",
    "sched_itmt_enabled",
    "sched_rr_timeslice_ms",
    "sched_rt_period_us",
    "sched_rt_runtime_us",
    "sched_schedstats",
    "sched_util_clamp_max",
    "sched_util_clamp_min",
    "sched_util_clamp_min_rt_default",
];

/// The `sched_*` entries of a `/proc/sys/kernel` listing that upstream Linux does not have (a
/// distribution's or cloud vendor's scheduler patch), each with its value, sorted. The model
/// knows none of them. Pure over the listing.
pub fn vendor_sched_sysctls(entries: &[(String, Option<String>)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = entries
        .iter()
        .filter(|(name, _)| name.starts_with("sched_") && !UPSTREAM_SCHED_SYSCTLS.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone().unwrap_or_else(|| "?".into())))
        .collect();
    out.sort();
    out
}

/// [`vendor_sched_sysctls`] of this machine.
pub fn host_vendor_sched_sysctls() -> Vec<(String, String)> {
    let dir = Path::new("/proc/sys/kernel");
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let entries: Vec<(String, Option<String>)> = rd
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let value = read_trimmed(&e.path());
            (name, value)
        })
        .collect();
    vendor_sched_sysctls(&entries)
}

/// `name = value` of each vendor sysctl, comma-separated.
pub fn vendor_sysctl_list(found: &[(String, String)]) -> String {
    found.iter().map(|(n, v)| format!("{n} = {v}")).collect::<Vec<_>>().join(", ")
}

/// What `--kernel host` and `topology host` say when the host kernel carries scheduler sysctls
/// upstream does not: its scheduler is patched in ways the model does not know. `None`
/// without any.
pub fn vendor_sysctl_note(found: &[(String, String)]) -> Option<String> {
    (!found.is_empty()).then(|| {
        format!(
            "this kernel has scheduler sysctls upstream Linux lacks ({}): a vendor patch the model \
             does not have, so its decisions may differ from this kernel's",
            vendor_sysctl_list(found)
        )
    })
}

/// `/proc/sys/kernel/sched_autogroup_enabled`: whether every session is a task group on this
/// host. A kernel without CONFIG_SCHED_AUTOGROUP has no such file: `false`.
pub fn autogroup_enabled() -> bool {
    read_trimmed(Path::new("/proc/sys/kernel/sched_autogroup_enabled")).is_some_and(|v| v == "1")
}

/// Idle time of each online CPU so far, in ns: the sum of `cpuidle/state*/time` (µs). `None`
/// when the machine has no cpuidle driver.
pub fn idle_ns_per_cpu(nr_cpus: usize) -> Option<Vec<u64>> {
    let mut out = Vec::with_capacity(nr_cpus);
    for cpu in 0..nr_cpus {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
        let entries = std::fs::read_dir(&dir).ok()?;
        let mut total_us = 0u64;
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with("state") {
                let t = std::fs::read_to_string(e.path().join("time")).ok()?;
                total_us += t.trim().parse::<u64>().ok()?;
            }
        }
        out.push(total_us * 1_000);
    }
    Some(out)
}

/// Rescheduling interrupts received so far, summed over CPUs (`RES:` of `/proc/interrupts`):
/// system-wide, so other activity on the machine is counted too.
pub fn resched_ipis() -> Option<u64> {
    parse_res_line(&std::fs::read_to_string("/proc/interrupts").ok()?)
}

fn parse_res_line(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.trim_start().starts_with("RES:"))?;
    let rest = line.trim_start().strip_prefix("RES:")?;
    Some(rest.split_whitespace().map_while(|t| t.parse::<u64>().ok()).sum())
}

/// Online CPUs (`/sys/devices/system/cpu/online`), else the affinity mask's count.
pub fn nr_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).max(
        std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|s| s.trim().rsplit(['-', ',']).next().and_then(|n| n.parse::<usize>().ok()))
            .map_or(1, |n| n + 1),
    )
}

/// The contents of a small sysfs/procfs file, trimmed.
pub(crate) fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRESETS: &[&str] = &["v6.12", "v6.16", "v6.18", "v6.19-rc6", "v6.19", "v7.2", "v7.3"];

    fn m(release: &str) -> (&'static str, bool) {
        let k = preset_for_release(release, PRESETS).unwrap();
        (k.preset, k.exact)
    }

    #[test]
    fn vendor_sched_sysctls_are_the_ones_upstream_lacks() {
        let e = |n: &str, v: Option<&str>| (n.to_string(), v.map(str::to_string));
        // A cloud vendor's 6.18 guest kernel (this project's own build machine) beside upstream
        // names and unrelated sysctls.
        let listing = [
            e("sched_vcpu_pack", Some("15")),
            e("sched_autogroup_enabled", Some("1")),
            e("sched_rt_runtime_us", Some("950000")),
            e("numa_balancing", Some("0")),
            e("osrelease", Some("6.18.44")),
            e("sched_zz_vendor", None),
        ];
        let found = vendor_sched_sysctls(&listing);
        assert_eq!(found, vec![("sched_vcpu_pack".into(), "15".into()), ("sched_zz_vendor".into(), "?".into())]);
        let note = vendor_sysctl_note(&found).unwrap();
        assert!(note.contains("sched_vcpu_pack = 15, sched_zz_vendor = ?"), "{note}");
        assert!(note.contains("vendor patch"), "{note}");
        // An upstream kernel: no note.
        assert!(vendor_sysctl_note(&vendor_sched_sysctls(&listing[1..5])).is_none());
    }

    #[test]
    fn exact_releases() {
        assert_eq!(m("6.18.44-fc-v595"), ("v6.18", true));
        assert_eq!(m("6.18.0"), ("v6.18", true));
        assert_eq!(m("6.12.48+deb13-amd64"), ("v6.12", true));
        assert_eq!(m("6.19.0-rc6"), ("v6.19-rc6", true));
        assert_eq!(m("6.19-rc6-00123-gabc"), ("v6.19-rc6", true));
        assert_eq!(m("7.3.4"), ("v7.3", true));
        assert_eq!(m("v6.16"), ("v6.16", true));
    }

    #[test]
    fn nearest_releases() {
        assert_eq!(m("6.17.3"), ("v6.18", false)); // tie between 6.16 and 6.18: the newer
        assert_eq!(m("6.13.1"), ("v6.12", false));
        assert_eq!(m("6.14"), ("v6.16", false)); // tie again
        assert_eq!(m("6.19-rc3"), ("v6.19-rc6", false));
        assert_eq!(m("6.20-rc1"), ("v6.19", false));
        assert_eq!(m("7.0.1"), ("v6.19", false));
        assert_eq!(m("7.1"), ("v7.2", false));
        assert_eq!(m("5.15.0-91-generic"), ("v6.12", false));
        assert_eq!(m("8.1"), ("v7.3", false));
        let k = preset_for_release("6.17.3", PRESETS).unwrap();
        assert_eq!(k.version, "6.17");
        assert!(k.note().unwrap().contains("nearest, v6.18"));
        assert!(preset_for_release("6.18", PRESETS).unwrap().note().is_none());
        // v6.12.0 is upstream 6.12.0 only; every 6.12.y maps to the LTS preset.
        let with_0 = ["v6.12", "v6.12.0", "v7.3"];
        assert_eq!(preset_for_release("6.12.117-amd64", &with_0).unwrap().preset, "v6.12");
        assert_eq!(preset_for_release("6.12.0", &with_0).unwrap().preset, "v6.12.0");
        assert!(preset_for_release("banana", PRESETS).is_err());
    }

    #[test]
    fn every_preset_maps_to_itself() {
        for k in sim::kernel::KERNELS {
            let names: Vec<&'static str> = sim::kernel::KERNELS.iter().map(|k| k.name).collect();
            let got = preset_for_release(&k.name[1..], &names).unwrap();
            assert_eq!((got.preset, got.exact), (k.name, true), "{}", k.name);
        }
    }

    #[test]
    fn host_sched_from_config() {
        let cfg = "CONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\n";
        let h = parse_host_sched(Some(cfg), "quiet");
        assert_eq!((h.hz, h.preempt.as_deref()), (Some(250), Some("none")));
        let h = parse_host_sched(Some(cfg), "quiet preempt=full");
        assert_eq!(h.preempt.as_deref(), Some("full"));
        let h = parse_host_sched(None, "");
        assert_eq!((h.hz, h.preempt), (None, None));
    }

    #[test]
    fn res_line() {
        let text = "           CPU0       CPU1\n  LOC:  387597  404693   Local timer interrupts\n  RES:   76893   62379   Rescheduling interrupts\n";
        assert_eq!(parse_res_line(text), Some(76893 + 62379));
    }
}
