//! `schedlab explain`: the arguments of `lab::explain`, which runs both variants and finds where
//! they first decide differently.

use lab::explain::Explain;

use crate::args::ExplainArgs;
use crate::setup::{self, UserError, lab_err, user};

fn quote(s: &str) -> String {
    lab::words::quote(s)
}

fn reproduce(a: &ExplainArgs, groups: &lab::runner::GroupOptions, base: &str, variant: &str) -> String {
    let mut cmd = format!("schedlab explain --topology {} --seed {}", quote(&a.topology), a.seed);
    if (a.duration - 10.0).abs() > f64::EPSILON {
        cmd += &format!(" --duration {}", a.duration);
    }
    if let Some(c) = &a.cpus {
        cmd += &format!(" --cpus {c}");
    }
    for b in &a.background {
        cmd += &format!(" --background {}", quote(b));
    }
    for w in groups.to_words() {
        cmd += &format!(" {}", quote(&w));
    }
    cmd += &format!(" --base {} --variant {} {}", quote(base), quote(variant), lab::words::join(&a.workload));
    cmd
}

pub fn explain(a: &ExplainArgs) -> anyhow::Result<()> {
    let base_spec = lab::spec::full_base(&a.base);
    let base = lab::spec::parse_full(&base_spec).map_err(|e| UserError(format!("--base `{}`: {e}", a.base)))?;
    let var_spec = lab::spec::full_variant(&a.variant, &base_spec);
    let variant = lab::spec::parse_full(&var_spec).map_err(|e| UserError(format!("--variant `{}`: {e}", a.variant)))?;
    let topo = lab::plan::resolve_topology(&a.topology).map_err(|e| UserError(format!("--topology: {e}")))?;
    if !(a.duration > 0.0 && a.duration <= 1e6) {
        return user(format!("--duration: {} is not a positive number of seconds", a.duration));
    }
    let ncpus = topo.nr_cpus() as u32;
    let cpus = match &a.cpus {
        Some(list) => Some(setup::cpu_list(list, ncpus)?),
        None => None,
    };
    let mut background = Vec::new();
    for b in &a.background {
        match lab::words::split(b) {
            Ok(w) if !w.is_empty() => background.push(w),
            Ok(_) => return user("--background: empty command"),
            Err(e) => return user(format!("--background: {e}")),
        }
    }
    let g = &a.groups;
    let groups = lab::runner::GroupOptions::from_flags(g.autogroup.as_deref(), g.cgroup.as_deref(), &g.cgroup_weight)
        .map_err(UserError)?;
    let reproduce = reproduce(a, &groups, &base_spec, &var_spec);
    let x = Explain {
        base_spec,
        variant_spec: var_spec,
        base,
        variant,
        topology: topo,
        seed: a.seed,
        duration_ns: (a.duration * 1e9) as u64,
        max_events: a.max_events,
        cpus,
        background,
        groups,
        workload: a.workload.clone(),
        context: a.context,
        after: a.after,
        reproduce,
    };
    print!("{}", lab::explain::explain(&x).map_err(lab_err)?);
    Ok(())
}
