//! `schedlab bench`: the options of `lab::bench`, whose table is printed line by line as each
//! case finishes.

use crate::args::BenchArgs;
use crate::setup::lab_err;

pub fn bench(a: &BenchArgs) -> anyhow::Result<()> {
    let opts = lab::bench::Options { only: a.only.clone(), seconds: a.seconds, scaling: a.scaling };
    lab::bench::run(&opts, |line| println!("{line}")).map_err(lab_err)
}
