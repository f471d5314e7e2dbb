//! Variant SPECs as users type them, turned into the token form `sim::kernel::parse_spec`
//! reads, and resolved against a base.
//!
//! Glued forms are split before parsing: `v7.3+next-buddy-eevdf` is `v7.3 +next-buddy-eevdf`,
//! `v6.19-rc6-next-buddy-eevdf` is `v6.19-rc6 -next-buddy-eevdf` (the longest preset prefix
//! wins, so `-rc6` stays part of the preset), and `+a+b` is `+a +b`. Patch names contain `-`,
//! so after a `+` or `-` the longest known patch name is taken; an unknown name runs to the next
//! `+` and reaches `parse_spec`, which reports it.
//!
//! The *full* SPEC of a variant always starts with a preset: a variant without one applies on
//! top of the base, so its full SPEC is the base's followed by its own tokens; a base without a
//! preset starts from `v7.3` (what `parse_spec` uses). The full SPEC is what the results store
//! keys on and what a reproduce line prints.

use sim::kernel::{self, Variant};

/// The preset a SPEC without one starts from (`parse_spec` with no base).
pub const DEFAULT_PRESET: &str = "v7.3";

/// Splits glued tokens and joins all tokens with single spaces.
pub fn normalize(spec: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for tok in spec.split([' ', ',', '\t', '\n']).filter(|t| !t.is_empty()) {
        split_token(tok, &mut out);
    }
    out.join(" ")
}

fn split_token(tok: &str, out: &mut Vec<String>) {
    if tok.starts_with(['+', '-']) {
        split_patches(tok, out);
        return;
    }
    if kernel::preset(tok).is_some() || tok.contains('=') {
        out.push(tok.to_string());
        return;
    }
    // The longest prefix that is a preset and is followed by a sign.
    let split = tok
        .char_indices()
        .filter(|&(i, c)| i > 0 && (c == '+' || c == '-'))
        .map(|(i, _)| i)
        .rev()
        .find(|&i| kernel::preset(&tok[..i]).is_some());
    match split {
        Some(i) => {
            out.push(tok[..i].to_string());
            split_patches(&tok[i..], out);
        }
        None => out.push(tok.to_string()),
    }
}

/// `+a-b+c` (patch names may contain `-`) into `+a`, `-b`, `+c`.
fn split_patches(mut rest: &str, out: &mut Vec<String>) {
    while !rest.is_empty() {
        let sign = &rest[..1];
        let body = &rest[1..];
        let known = kernel::PATCHES
            .iter()
            .map(|p| p.name)
            .filter(|name| {
                body.strip_prefix(name).is_some_and(|after| after.is_empty() || after.starts_with(['+', '-']))
            })
            .max_by_key(|name| name.len());
        let len = match known {
            Some(name) => name.len(),
            None => body.find('+').unwrap_or(body.len()),
        };
        out.push(format!("{sign}{}", &body[..len]));
        rest = &body[len..];
    }
}

/// Whether a normalized SPEC starts with a kernel preset.
pub fn has_preset(normalized: &str) -> bool {
    normalized.split(' ').next().is_some_and(|t| kernel::preset(t).is_some())
}

/// The full SPEC (starting with a preset) of a base typed as `base`.
pub fn full_base(base: &str) -> String {
    let n = normalize(base);
    if has_preset(&n) {
        n
    } else if n.is_empty() {
        DEFAULT_PRESET.to_string()
    } else {
        format!("{DEFAULT_PRESET} {n}")
    }
}

/// The full SPEC of a variant typed as `variant`, relative to the full SPEC of its base.
pub fn full_variant(variant: &str, base_full: &str) -> String {
    let n = normalize(variant);
    if has_preset(&n) {
        n
    } else if n.is_empty() {
        base_full.to_string()
    } else {
        format!("{base_full} {n}")
    }
}

/// Parses a full SPEC; the message names the offending token.
pub fn parse_full(full: &str) -> Result<Variant, String> {
    kernel::parse_spec(full, None).map_err(|e| e.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glued_forms_split() {
        assert_eq!(normalize("v7.3+next-buddy-eevdf"), "v7.3 +next-buddy-eevdf");
        assert_eq!(normalize("v6.19-rc6-next-buddy-eevdf"), "v6.19-rc6 -next-buddy-eevdf");
        assert_eq!(normalize("v6.19-rc6"), "v6.19-rc6");
        assert_eq!(
            normalize("v6.12+wake-affine-idle-delayed-fix+preempt-sync-runtime-fix,NEXT_BUDDY"),
            "v6.12 +wake-affine-idle-delayed-fix +preempt-sync-runtime-fix NEXT_BUDDY"
        );
        assert_eq!(
            normalize("+next-buddy-eevdf-wake-affine-sync-reciprocal"),
            "+next-buddy-eevdf -wake-affine-sync-reciprocal"
        );
        assert_eq!(
            normalize("  v7.3   NO_DELAY_DEQUEUE  base_slice_ns=3000000 "),
            "v7.3 NO_DELAY_DEQUEUE base_slice_ns=3000000"
        );
        assert_eq!(normalize("v7.3+no-such+next-buddy-eevdf"), "v7.3 +no-such +next-buddy-eevdf");
        assert_eq!(normalize("7.3.4+next-buddy-eevdf"), "7.3.4 +next-buddy-eevdf");
    }

    #[test]
    fn full_specs() {
        assert_eq!(full_base("NO_DELAY_DEQUEUE"), "v7.3 NO_DELAY_DEQUEUE");
        assert_eq!(full_base("v6.18"), "v6.18");
        assert_eq!(full_variant("+next-buddy-eevdf", "v7.3"), "v7.3 +next-buddy-eevdf");
        assert_eq!(full_variant("v6.19+next-buddy-eevdf", "v7.3"), "v6.19 +next-buddy-eevdf");
        assert!(parse_full("v7.3 +next-buddy-eevdf").is_ok());
        assert!(parse_full("v7.3 +no-such").unwrap_err().contains("no-such"));
    }
}
