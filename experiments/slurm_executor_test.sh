#!/usr/bin/env bash
# --executor=slurm (issue #66) against fake sbatch, squeue and sacct (testdata/fake_slurm/: sbatch runs
# the array's tasks here, one after another, with SLURM_ARRAY_TASK_ID set). A 2 x 2-seed csbm table
# run through the job array gives the local executor's records (apart from timing and host fields)
# and report; the batch script asks for one CPU, the memory and time the records call for (a default
# without them), the partition, account and QOS, and sbatch gets the extra arguments; runs whose
# recorded peaks fall in different memory classes go to different arrays, each with its own --mem; a
# failed task is reported with its Slurm state and log, and the runner exits non-zero; --no_wait
# submits (two arrays) and returns, and a later --cached_only records the finished runs of both;
# --stop_by submits only runs that can end in time and sets --deadline.
set -euo pipefail
runner="experiments/table_runner"
run="$(pwd)/experiments/run"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
export PATH="$(pwd)/experiments/testdata/fake_slurm:$PATH"
export FAKE_SLURM_DIR="$tmp/fake_slurm"
table="$tmp/paper/slurm.textproto"
mkdir -p "$tmp/paper"
cat > "$table" <<'TABLE'
id: "slurm_test"
title: "slurm executor test"
paper: "none"
metric: "test accuracy (%)"
base {
  name: "slurm_test"
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
cells { row: "fedavg" column: "c3" paper { mean: 50 present: true } }
cells { row: "fedprox" column: "c3" paper { mean: 50 present: true } }
TABLE
fail() { echo "FAIL: $*"; exit 1; }
runner_in() {  # runner_in NAME ARGS...: the runner with NAME's own results, cache and reports
  local name="$1"; shift
  "$runner" --table="$table" --results_dir="$tmp/$name/results" --cache_dir="$tmp/$name/cache" \
      --report_dir="$tmp/$name/reports" --run_binary="$run" "$@" 2>"$tmp/$name.log"
}
slurm_args=(--executor=slurm --slurm_poll_seconds=0.2 --slurm_partition=cpu --slurm_account=fgl-lab
            --slurm_qos=normal --slurm_max_parallel=2 "--slurm_extra_args=--requeue --comment=fgl")
# A record without what differs between executors: times, peak, commit, machine (and the checksum).
numbers() { jq -cS 'del(.seconds_curve, .peak_rss_bytes, .result.wall_s, .result.train_s, .result.code_commit, .result.machine, .checksum)' "$1"; }
same_records() {  # same_records A B: the same record files, with the same numbers
  local f
  [[ "$(cd "$tmp/$1/results" && ls *.json)" == "$(cd "$tmp/$2/results" && ls *.json)" ]] \
    || fail "$1 and $2 recorded different runs: $(ls "$tmp/$1/results") / $(ls "$tmp/$2/results")"
  for f in "$tmp/$1"/results/*.json; do
    [[ "$(numbers "$f")" == "$(numbers "$tmp/$2/results/${f##*/}")" ]] \
      || fail "${f##*/} differs: $(diff <(numbers "$f" | jq -S .) <(numbers "$tmp/$2/results/${f##*/}" | jq -S .))"
  done
}
# A report without the lines that name times, machines and commits.
report() { grep -viE 'machine|commit|wall|cpu-h|seconds|minutes|[0-9]+ s\b' "$tmp/$1/reports/paper/slurm.md"; }
wait_for_queue() {  # until the fake queue holds no task of job $1
  for _ in $(seq 600); do
    [[ -z "$(squeue -h -r -j "$1" -o '%i %T')" ]] && return
    sleep 0.5
  done
  fail "job $1 still queued"
}

# The local executor, for comparison.
runner_in local --jobs=2 || { cat "$tmp/local.log"; fail "local runner"; }
[[ "$(ls "$tmp"/local/results/*.json | wc -l)" == 4 ]] || fail "local: expected 4 records"

# The same table as one job array.
runner_in slurm "${slurm_args[@]}" --slurm_dir="$tmp/shared/slurm" || { cat "$tmp/slurm.log"; fail "slurm runner"; }
same_records slurm local
[[ "$(report slurm)" == "$(report local)" ]] || fail "reports differ: $(diff <(report local) <(report slurm))"
script=("$tmp"/shared/slurm/arrays/*/run.sbatch)
[[ ${#script[@]} == 1 ]] || fail "expected one batch script: ${script[*]}"
for line in '--array=0-3%2' '--cpus-per-task=1' '--mem=4096M' '--time=1440' '--partition=cpu' '--account=fgl-lab' \
            '--qos=normal' "--output=${script%/run.sbatch}/task_%a.log"; do
  grep -qx -- "#SBATCH $line" "${script[0]}" || fail "script lacks #SBATCH $line: $(cat "${script[0]}")"
done
grep -q -- "--deadline" "${script[0]}" && fail "a deadline without --stop_by"
grep -q -- "^exec '$run' --spec=\"\$dir/spec.textproto\" --threads=1 --out=\"\$dir/out\" --checkpoint_dir=\"\$dir/ckpt\"" \
  "${script[0]}" || fail "script does not run the run binary: $(cat "${script[0]}")"
[[ "$(cat "$FAKE_SLURM_DIR/sbatch.args")" == "--parsable --requeue --comment=fgl ${script[0]}" ]] \
  || fail "sbatch arguments: $(cat "$FAKE_SLURM_DIR/sbatch.args")"
grep -q 'submitted job array 4101: 4 runs' "$tmp/slurm.log" || { cat "$tmp/slurm.log"; fail "no submission line"; }
grep -q '\[slurm 4/4\] done 4  running 0  pending 0  failed 0' "$tmp/slurm.log" || { cat "$tmp/slurm.log"; fail "no progress line"; }
for f in "$tmp"/slurm/results/*.json; do
  jq -e '(.result.machine | test("^[^ ]+ [0-9]+ cores .*; slurm node ")) and (.peak_rss_bytes | tonumber) > 0' "$f" >/dev/null \
    || fail "record without the node or its peak: $(jq -c '[.result.machine, .peak_rss_bytes]' "$f")"
done
[[ -z "$(ls -A "$tmp/shared/slurm/runs")" ]] || fail "run directories left after their records: $(ls "$tmp/shared/slurm/runs")"

# A third seed, with the 4 records there but FedProx's peaks made 3 GiB (a record without a checksum
# is read as it is): two arrays, each with --mem from its own runs (FedAvg's from its recorded peak,
# FedProx's 3 GiB x 1.25 + 512 MiB = 4352M; one array would ask 4352M of both) and --time from the
# recorded wall times. FedProx's task fails: reported with its state and log, the cell reads RUN
# FAILED, the runner exits non-zero.
sed -i 's/seeds: \[2024, 2025\]/seeds: [2026]/' "$table"
mkdir -p "$tmp/fail/results"
with_peak() {  # with_peak RECORD BYTES: the record with that peak and no checksum, in place
  jq -c --arg p "$2" '.peak_rss_bytes = $p | del(.checksum)' "$1" > "$1.tmp" && mv "$1.tmp" "$1"
}
fedavg_peak=0
for f in "$tmp"/local/results/*.json; do
  cp "$f" "$tmp/fail/results/"
  if [[ "$(jq -r .result.method "$f")" == fedprox ]]; then
    with_peak "$tmp/fail/results/${f##*/}" 3221225472
  else
    fedavg_peak="$(jq -n --arg a "$fedavg_peak" --arg b "$(jq -r .peak_rss_bytes "$f")" '[$a, $b] | map(tonumber) | max')"
  fi
done
mem="$(awk -v p="$fedavg_peak" 'BEGIN { x = p / 1048576 * 1.25 + 512; printf "%d", (x == int(x) ? x : int(x) + 1) }')"
(( mem < 4352 )) || fail "FedAvg's recorded peak $fedavg_peak is not below FedProx's 3 GiB"
cat > "$tmp/fail_fedprox.sh" <<WRAPPER
#!/usr/bin/env bash
for a in "\$@"; do
  [[ "\$a" == --spec=* ]] && grep -q 'method: "fedprox"' "\${a#--spec=}" && { echo "failing on purpose" >&2; exit 3; }
done
exec "$run" "\$@"
WRAPPER
chmod +x "$tmp/fail_fedprox.sh"
if runner_in fail "${slurm_args[@]}" --slurm_dir="$tmp/shared/fail" --run_binary="$tmp/fail_fedprox.sh"; then
  fail "a failed task did not fail the runner"
fi
script=("$tmp"/shared/fail/arrays/*/run.sbatch)
[[ ${#script[@]} == 2 ]] || fail "expected two batch scripts (two memory classes): ${script[*]}"
small=("$tmp"/shared/fail/arrays/*-"${mem}"M-11min/run.sbatch)
large=("$tmp"/shared/fail/arrays/*-4352M-11min/run.sbatch)
for s in "${small[0]}" "${large[0]}"; do
  [[ -f "$s" ]] || fail "no array for ${mem}M and 4352M: ${script[*]}"
  for line in '--array=0-0%2' '--time=11' "--output=${s%/run.sbatch}/task_%a.log"; do
    grep -qx -- "#SBATCH $line" "$s" || fail "$s lacks #SBATCH $line: $(cat "$s")"
  done
done
grep -qx -- "#SBATCH --mem=${mem}M" "${small[0]}" || fail "expected --mem=${mem}M: $(grep mem "${small[0]}")"
grep -qx -- "#SBATCH --mem=4352M" "${large[0]}" || fail "expected --mem=4352M: $(grep mem "${large[0]}")"
grep -q "submitted job array 4102: 1 runs (--mem=${mem}M --time=11 each)" "$tmp/fail.log" \
  && grep -q 'submitted job array 4103: 1 runs (--mem=4352M --time=11 each)' "$tmp/fail.log" \
  && grep -q 'submitted 2 runs as 2 job arrays' "$tmp/fail.log" || { cat "$tmp/fail.log"; fail "submission lines"; }
log="${large[0]%/run.sbatch}/task_0.log"
grep -q "run failed for cell fedprox/c3 seed 2026: Slurm job 4103_0 FAILED; log: $log" "$tmp/fail.log" \
  || { cat "$tmp/fail.log"; fail "failed task not reported with its state and log"; }
grep -q "failing on purpose" "$log" || fail "task log: $(cat "$log")"
grep -q '\[slurm 2/2\] done 1  running 0  pending 0  failed 1' "$tmp/fail.log" \
  || { cat "$tmp/fail.log"; fail "progress over both arrays"; }
grep -q "RUN FAILED" "$tmp/fail/reports/paper/slurm.md" || fail "failed cell not marked"
[[ "$(ls "$tmp"/fail/results/*.json | wc -l)" == 5 ]] || fail "expected the 4 records and FedAvg's"
sed -i 's/seeds: \[2026\]/seeds: [2024, 2025]/' "$table"

# --no_wait submits and returns with the cells not run; a later --cached_only records the outputs.
# FedAvg's seed-2026 record, its peak made 3 GiB, puts FedAvg's runs in an array of their own
# (4352M) beside FedProx's (no record: the 4 GB default); it is taken away before collecting.
mkdir -p "$tmp/nowait/results"
for f in "$tmp"/fail/results/*.json; do
  [[ -e "$tmp/local/results/${f##*/}" ]] || seeded="$tmp/nowait/results/${f##*/}"
done
cp "$tmp/fail/results/${seeded##*/}" "$seeded"
with_peak "$seeded" 3221225472
runner_in nowait "${slurm_args[@]}" --slurm_dir="$tmp/shared/nowait" --no_wait || { cat "$tmp/nowait.log"; fail "--no_wait"; }
[[ "$(ls "$tmp/nowait/results")" == "${seeded##*/}" ]] || fail "--no_wait wrote records"
grep -q 'not run' "$tmp/nowait/reports/paper/slurm.md" || fail "--no_wait report has no 'not run' cells"
grep -q 'submitted job array 4104: 2 runs (--mem=4096M --time=1440 each)' "$tmp/nowait.log" \
  && grep -q 'submitted job array 4105: 2 runs (--mem=4352M --time=11 each)' "$tmp/nowait.log" \
  || { cat "$tmp/nowait.log"; fail "--no_wait: expected two arrays"; }
wait_for_queue 4104
wait_for_queue 4105
rm "$seeded"
runner_in nowait "${slurm_args[@]}" --slurm_dir="$tmp/shared/nowait" --cached_only || { cat "$tmp/nowait.log"; fail "collect"; }
grep -q 'recorded 4 runs finished on Slurm' "$tmp/nowait.log" || { cat "$tmp/nowait.log"; fail "collect line"; }
same_records nowait local
cmp "$tmp/nowait/reports/paper/slurm.md" "$tmp/slurm/reports/paper/slurm.md" \
  || fail "collected report differs: $(diff "$tmp/slurm/reports/paper/slurm.md" "$tmp/nowait/reports/paper/slurm.md")"
[[ "$(wc -l < "$FAKE_SLURM_DIR/sbatch.args")" == 5 ]] || fail "collecting submitted again"

# --stop_by: past, nothing is submitted and the cells read "not run"; an hour ahead, the array gets
# --deadline (runs of known length: the local records are there).
sed -i 's/seeds: \[2024, 2025\]/seeds: [2027]/' "$table"
mkdir -p "$tmp/stop/results"
cp "$tmp"/local/results/*.json "$tmp/stop/results/"
runner_in stop "${slurm_args[@]}" --slurm_dir="$tmp/shared/stop" --stop_by="$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)" \
  || { cat "$tmp/stop.log"; fail "--stop_by in the past"; }
[[ "$(grep -c 'not started (--stop_by)' "$tmp/stop.log")" == 2 ]] || { cat "$tmp/stop.log"; fail "expected 2 runs not started"; }
[[ "$(wc -l < "$FAKE_SLURM_DIR/sbatch.args")" == 5 ]] || fail "submitted runs that cannot end by --stop_by"
runner_in stop "${slurm_args[@]}" --slurm_dir="$tmp/shared/stop" --stop_by="$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)" \
  || { cat "$tmp/stop.log"; fail "--stop_by an hour ahead"; }
script=("$tmp"/shared/stop/arrays/*/run.sbatch)
grep -q -- '^#SBATCH --deadline=20[0-9-]*T[0-9:]*$' "${script[0]}" || fail "no --deadline: $(cat "${script[0]}")"
[[ "$(ls "$tmp"/stop/results/*.json | wc -l)" == 6 ]] || fail "expected the 4 records and 2 new ones"
echo PASS
