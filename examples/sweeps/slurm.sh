#!/bin/bash
# A sweep as a Slurm job array: N shards, each on its own node, each writing its own database.
#
#   mkdir -p results
#   sbatch --array=0-3 examples/sweeps/slurm.sh examples/sweeps/plan.toml
#   # when all tasks are done:
#   schedlab merge results/shard-* --out results/merged
#   schedlab compare --from results/merged
#
# Shard I of N runs the plan's runs whose number is I modulo N (0-based), so the shards together
# run every run exactly once. A task that is requeued or rerun skips the runs its database
# already holds. Copy whole shard directories (results.db-wal holds committed runs of a task
# that was killed).
#
# Slurm opens --output before the script starts, so results/ must exist at submission: without
# it every task fails at launch (JobLaunchFailure) and writes nothing. On nodes with fewer than
# 8 CPUs give sbatch --cpus-per-task=N (the command line overrides the #SBATCH lines). This
# script runs on a real single-node Slurm in the tests (crates/cli/tests/slurm.rs; how, with
# timings, in docs/slurm.md).
#SBATCH --job-name=schedlab-sweep
#SBATCH --cpus-per-task=8
#SBATCH --time=01:00:00
#SBATCH --output=results/slurm-%A_%a.out
set -euo pipefail

PLAN=${1:-examples/sweeps/plan.toml}
# The shard count is the array size: --array=0-3 gives 4 shards.
N=${SLURM_ARRAY_TASK_COUNT:?submit with sbatch --array=0-(N-1)}
I=${SLURM_ARRAY_TASK_ID:?submit with sbatch --array=0-(N-1)}

mkdir -p results
exec schedlab sweep "$PLAN" --shard "$I/$N" --out "results/shard-$I" --jobs "${SLURM_CPUS_PER_TASK:-1}"
