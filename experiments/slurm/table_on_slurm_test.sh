#!/usr/bin/env bash
# --executor=slurm against a real Slurm (issue #66): a one-node cluster from Debian's packages
# (local_cluster.sh, under the test's temporary directory) runs a 2 x 2 csbm table with 2 seeds
# (8 runs) as a job array; its records equal the local executor's apart from timing and host
# fields, its report equals the local one apart from the lines naming times and machines, and the
# report regenerates byte for byte from the Slurm records alone (--cached_only). Prints the wall
# time of both executors and Slurm's per-task overhead (submission to task start).
set -euo pipefail
runner="$(pwd)/experiments/table_runner"
run="$(pwd)/experiments/run"
cluster_sh="$(pwd)/experiments/slurm/local_cluster.sh"
tmp="${TEST_TMPDIR:-$(mktemp -d)}/table_on_slurm"
rm -rf "$tmp" && mkdir -p "$tmp/paper"
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/cluster/log/slurm{ctld,d}.log; do [[ -f "$f" ]] && { echo "--- $f"; tail -n 10 "$f"; }; done
  exit 1
}

bash "$cluster_sh" start "$tmp/cluster" || fail "could not start the local Slurm cluster"
trap 'bash "$cluster_sh" stop "$tmp/cluster"' EXIT
source "$tmp/cluster/env"

table="$tmp/paper/slurm.textproto"
cat > "$table" <<'TABLE'
id: "table_on_slurm"
title: "table on a local Slurm cluster"
paper: "none"
metric: "test accuracy (%)"
base {
  name: "table_on_slurm"
  dataset: "csbm:num_nodes=300"
  partitioner: "louvain"
  clients: 3
  method: "fedavg"
  model: "gcn:layers=2,hidden=16,dropout=0.5"
  rounds: 3
  local_epochs: 1
  seeds: [2024, 2025]
}
rows { key: "fedavg" label: "FedAvg" }
rows { key: "fedprox" label: "FedProx" overrides { method: "fedprox" } }
columns { key: "c3" label: "3 clients" }
columns { key: "c4" label: "4 clients" overrides { clients: 4 } }
cells { row: "fedavg" column: "c3" paper { mean: 50 present: true } }
cells { row: "fedavg" column: "c4" paper { mean: 50 present: true } }
cells { row: "fedprox" column: "c3" paper { mean: 50 present: true } }
cells { row: "fedprox" column: "c4" paper { mean: 50 present: true } }
TABLE
runner_in() {  # runner_in NAME ARGS...: the runner with NAME's own results, cache and reports
  local name="$1"; shift
  "$runner" --table="$table" --results_dir="$tmp/$name/results" --cache_dir="$tmp/$name/cache" \
      --report_dir="$tmp/$name/reports" --run_binary="$run" "$@" 2>"$tmp/$name.log"
}
# As in ../slurm_executor_test.sh: a record without what differs between executors (times, peak,
# commit, machine, and the checksum over them), and a report without the lines naming them.
numbers() { jq -cS 'del(.seconds_curve, .peak_rss_bytes, .result.wall_s, .result.train_s, .result.code_commit, .result.machine, .checksum)' "$1"; }
report() { grep -viE 'machine|commit|wall|cpu-h|seconds|minutes|[0-9]+ s\b' "$tmp/$1/reports/paper/slurm.md"; }
now() { date +%s.%N; }

t0="$(now)"
runner_in local --jobs=2 || { cat "$tmp/local.log"; fail "local runner"; }
t1="$(now)"
[[ "$(ls "$tmp"/local/results/*.json | wc -l)" == 8 ]] || fail "local: expected 8 records"

# Every task asks 1 CPU and 1 GB: the node's CPUs (2 in CI) bound how many run at once.
runner_in slurm --executor=slurm --slurm_dir="$tmp/shared/slurm" --slurm_poll_seconds=0.5 \
    --slurm_max_parallel=4 --slurm_default_mem_gb=1 || { cat "$tmp/slurm.log"; fail "slurm runner"; }
t2="$(now)"
grep -q 'submitted job array [0-9]*: 8 runs (--mem=1024M --time=1440 each)' "$tmp/slurm.log" \
  || { cat "$tmp/slurm.log"; fail "expected one array of 8 runs"; }

[[ "$(cd "$tmp/slurm/results" && ls *.json)" == "$(cd "$tmp/local/results" && ls *.json)" ]] \
  || fail "different runs recorded: $(ls "$tmp/slurm/results") / $(ls "$tmp/local/results")"
for f in "$tmp"/slurm/results/*.json; do
  [[ "$(numbers "$f")" == "$(numbers "$tmp/local/results/${f##*/}")" ]] \
    || fail "${f##*/} differs: $(diff <(numbers "$tmp/local/results/${f##*/}" | jq -S .) <(numbers "$f" | jq -S .))"
  jq -e '(.result.machine | test("; slurm node [^ ]+")) and (.peak_rss_bytes | tonumber) > 0' "$f" >/dev/null \
    || fail "record without the node or its peak: $(jq -c '[.result.machine, .peak_rss_bytes]' "$f")"
done
[[ "$(report slurm)" == "$(report local)" ]] || fail "reports differ: $(diff <(report local) <(report slurm))"
[[ -z "$(ls -A "$tmp/shared/slurm/runs")" ]] || fail "run directories left after their records"

# The report again, from the Slurm records only: byte for byte.
mkdir -p "$tmp/regen"
cp -r "$tmp/slurm/results" "$tmp/regen/results"
runner_in regen --cached_only || { cat "$tmp/regen.log"; fail "--cached_only"; }
cmp "$tmp/slurm/reports/paper/slurm.md" "$tmp/regen/reports/paper/slurm.md" \
  || fail "regenerated report differs: $(diff "$tmp/slurm/reports/paper/slurm.md" "$tmp/regen/reports/paper/slurm.md")"

# Slurm's overhead: the first task's start after submission (Slurm's own times, 1 s resolution),
# and the extra wall time per run over the local executor (both run 2 at a time on 2 cores).
job="$(cat "$tmp"/shared/slurm/arrays/*/job_id)"
first="$(scontrol -o show job "$job" | grep -oE '(SubmitTime|StartTime)=[^ ]+' | sed 's/^[^=]*=//' \
  | while read -r t; do date -d "$t" +%s; done | paste - - | awk '{ d = $2 - $1; if (NR == 1 || d < m) m = d } END { print m }')"
awk -v t0="$t0" -v t1="$t1" -v t2="$t2" -v first="$first" 'BEGIN {
  printf "PASS: 8 runs on Slurm equal the local ones; local %.1f s, slurm %.1f s (%.2f s more a run); first task started %s s after submission\n", t1 - t0, t2 - t1, (t2 - t1 - (t1 - t0)) / 8, first }'
