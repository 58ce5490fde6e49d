#!/usr/bin/env bash
# The table runner resumes an interrupted run from its checkpoint with the numbers of an
# uninterrupted one (FedAvg, and FedTAD for a preparation exchange): rounds.jsonl keeps the rounds
# before the checkpoint, the record's curves and result match, its training time counts the
# earlier process's rounds, and the checkpoint directory goes once the record is written. A
# checkpoint of other code versions is not resumed; a corrupt one is set aside by the run, which
# starts afresh.
set -euo pipefail
runner="experiments/table_runner"
run="$(pwd)/experiments/run"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
table="$tmp/paper/ck.textproto"
mkdir -p "$tmp/paper"
cat > "$table" <<'TABLE'
id: "ck_test"
title: "checkpoint test"
paper: "none"
metric: "test accuracy (%)"
base {
  name: "ck_test"
  dataset: "csbm:num_nodes=600"
  partitioner: "louvain"
  clients: 3
  method: "fedavg"
  model: "gcn:layers=2,hidden=16,dropout=0.5"
  rounds: 6
  local_epochs: 2
  seeds: [2024]
}
rows { key: "fedavg" label: "FedAvg" }
rows { key: "fedtad" label: "FedTAD (uploads in a preparation exchange)" overrides { method: "fedtad" } }
columns { key: "c3" label: "3 clients" }
cells { row: "fedavg" column: "c3" paper { mean: 50 present: true } }
cells { row: "fedtad" column: "c3" paper { mean: 50 present: true } }
TABLE
fail() { echo "FAIL: $*"; exit 1; }
runner_in() {  # runner_in NAME ARGS...: the runner with its own results and reports, one cache
  local name="$1"; shift
  "$runner" --table="$table" --results_dir="$tmp/$name/results" --cache_dir="$tmp/cache" \
      --report_dir="$tmp/$name/reports" --run_binary="$run" --jobs=1 "$@" 2>"$tmp/$name.log" \
    || { cat "$tmp/$name.log"; fail "runner $name"; }
}
# A record without what differs between processes: times, peak, commit, machine (and the checksum
# over them all).
numbers() { jq -cS 'del(.seconds_curve, .peak_rss_bytes, .result.wall_s, .result.train_s, .result.code_commit, .result.machine, .checksum)' "$1"; }
# The record of one row (fedavg or fedtad) under NAME's results.
record_of() {
  local f
  for f in "$tmp/$1"/results/*.json; do
    [[ "$(jq -r .result.method "$f")" == "$2" ]] && { echo "$f"; return; }
  done
  fail "$1: no record of $2"
}
same_records() {  # same_records NAME: both rows' numbers as the uninterrupted runner's
  local m
  [[ "$(ls "$tmp/$1"/results/*.json | wc -l)" == 2 ]] || fail "$1: expected two records"
  for m in fedavg fedtad; do
    [[ "$(numbers "$(record_of "$1" $m)")" == "$(numbers "$(record_of plain $m)")" ]] \
      || fail "$1: $m differs: $(diff <(numbers "$(record_of plain $m)" | jq -S .) <(numbers "$(record_of "$1" $m)" | jq -S .))"
  done
}
# interrupt ROUNDS EVERY: every run as a process that stopped after ROUNDS rounds with a
# checkpoint every EVERY rounds (the table's runs have 6); the next runner resumes them.
interrupt() {
  local spec stem
  for spec in "$tmp"/cache/*.spec.textproto; do
    stem="${spec%.spec.textproto}"
    rm -rf "$stem.out" "$stem.ckpt" && mkdir -p "$stem.ckpt"
    "$run" --spec="$spec" --out="$stem.out" --checkpoint_dir="$stem.ckpt" --checkpoint_every="$2" --rounds="$1" \
        >/dev/null 2>"$tmp/interrupted.log" || { cat "$tmp/interrupted.log"; fail "interrupted run"; }
    [[ -s "$stem.ckpt/checkpoint.pb" && -s "$stem.ckpt/peak_rss_bytes" ]] || fail "no checkpoint or peak file"
    [[ "$(wc -l < "$stem.out/seed_2024/rounds.jsonl")" == "$1" ]] || fail "interrupted run's rounds.jsonl"
    # What the runner stamped this run's checkpoints with (the test runs under one code version).
    cp "$stem.ckpt.stamp" "$stem.ckpt/stamp"
  done
}

# Uninterrupted, no checkpoints.
runner_in plain --checkpoint_minutes=0
ls -d "$tmp"/cache/*.ckpt 2>/dev/null && fail "a checkpoint directory without checkpoints"
[[ "$(jq -r .result.preparation_bytes_up "$(record_of plain fedtad)")" -gt 0 ]] || fail "fedtad has no preparation upload"

# Checkpoints every 2 rounds (the run binary's arguments logged by a wrapper): the same numbers,
# and the directories are gone afterwards; the wrapper keeps the stamps they held for the cases below.
cat > "$tmp/run_logged.sh" <<WRAPPER
#!/usr/bin/env bash
echo "\$@" >> "$tmp/run_args.log"
for a in "\$@"; do [[ "\$a" == --checkpoint_dir=* ]] && d="\${a#--checkpoint_dir=}"; done
"$run" "\$@"; rc=\$?
[[ -n "\$d" ]] && cp "\$d/stamp" "\$d.stamp"
exit \$rc
WRAPPER
chmod +x "$tmp/run_logged.sh"
runner_in every2 --checkpoint_rounds=2 --run_binary="$tmp/run_logged.sh"
grep -q -- "--checkpoint_dir=$tmp/cache/.*\.ckpt --checkpoint_every=2 --checkpoint_minutes=10 --resume" "$tmp/run_args.log" \
  || fail "runner did not ask for checkpoints: $(cat "$tmp/run_args.log")"
[[ "$(ls "$tmp"/cache/*.ckpt.stamp | wc -l)" == 2 ]] || fail "no stamp beside the checkpoints"
same_records every2
ls -d "$tmp"/cache/*.ckpt 2>/dev/null && fail "checkpoint directory left after the record"

# Interrupted after round 3 with a checkpoint after round 2: rounds.jsonl holds round 3, which the
# resumed run redoes. An earlier process's peak, higher than any real one, is kept.
interrupt 3 2
for d in "$tmp"/cache/*.ckpt; do echo 999999999999 > "$d/peak_rss_bytes"; done
runner_in resumed --checkpoint_minutes=0
grep -q "resuming fedavg/c3 seed 2024" "$tmp/resumed.log" || { cat "$tmp/resumed.log"; fail "runner did not say it resumes"; }
grep -q "resumed from .* after round 2" "$tmp"/cache/*.log || fail "runs did not resume after round 2"
same_records resumed
[[ "$(jq '.test_curve | length' "$(record_of resumed fedavg)")" == 6 ]] || fail "resumed record's curve is not 6 rounds"
[[ "$(jq -r .peak_rss_bytes "$(record_of resumed fedavg)")" == 999999999999 ]] || fail "the earlier processes' peak was not kept"
ls -d "$tmp"/cache/*.ckpt 2>/dev/null && fail "checkpoint directory left after the resumed records"

# Interrupted after its last round's checkpoint: the resumed run only scores round 6, and its
# training time still counts every round (train_s covers the per-round seconds).
interrupt 6 6
runner_in last
same_records last
for m in fedavg fedtad; do
  jq -e '.result.train_s >= ([.seconds_curve[]] | add) and ([.seconds_curve[]] | add) > 0' "$(record_of last $m)" >/dev/null \
    || fail "last-round resume lost the earlier rounds' time: $(jq -c '[.result.train_s, .seconds_curve]' "$(record_of last $m)")"
done

# A checkpoint stamped by other code versions is not resumed.
interrupt 3 2
for d in "$tmp"/cache/*.ckpt; do echo "results-v0 fedavg@0" > "$d/stamp"; done
runner_in restamped
grep -q "not of this code's versions" "$tmp/restamped.log" || { cat "$tmp/restamped.log"; fail "foreign stamp resumed"; }
grep -q "resumed from" "$tmp"/cache/*.log && fail "a run resumed from a foreign checkpoint"
same_records restamped

# A corrupt checkpoint: the run moves it aside (checkpoint.pb.damaged, issue #68 (7)) and starts
# afresh, with the numbers of an uninterrupted run; its directory goes with the record.
interrupt 3 2
for d in "$tmp"/cache/*.ckpt; do echo "not a checkpoint" > "$d/checkpoint.pb"; done
runner_in afresh
grep -q "corrupt checkpoint: moved aside" "$tmp"/cache/*.log || fail "corrupt checkpoint not set aside"
same_records afresh
ls -d "$tmp"/cache/*.ckpt 2>/dev/null && fail "checkpoint directory left after the records"
echo PASS
