#!/usr/bin/env bash
# The table runner resumes an interrupted run from its checkpoint with the numbers of an
# uninterrupted one: rounds.jsonl keeps the rounds before the checkpoint, the record's curves and
# result match, and the checkpoint directory goes once the record is written. A run whose resume
# fails (a corrupt checkpoint) loses its checkpoint, so the next runner starts it afresh.
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
columns { key: "c3" label: "3 clients" }
cells { row: "fedavg" column: "c3" paper { mean: 50 present: true } }
TABLE
fail() { echo "FAIL: $*"; exit 1; }
runner_in() {  # runner_in NAME ARGS...: the runner with its own results and reports, one cache
  local name="$1"; shift
  "$runner" --table="$table" --results_dir="$tmp/$name/results" --cache_dir="$tmp/cache" \
      --report_dir="$tmp/$name/reports" --run_binary="$run" --jobs=1 "$@" 2>"$tmp/$name.log" \
    || { cat "$tmp/$name.log"; fail "runner $name"; }
}
# A record without what differs between processes: times, peak, commit, machine.
numbers() { jq -cS 'del(.seconds_curve, .peak_rss_bytes, .result.wall_s, .result.train_s, .result.code_commit, .result.machine)' "$1"; }
one_record() {
  local files=("$tmp/$1"/results/*.json)
  [[ ${#files[@]} == 1 && -s "${files[0]}" ]] || fail "$1: expected one record, got ${files[*]}"
  echo "${files[0]}"
}

# Uninterrupted, no checkpoints.
runner_in plain --checkpoint_minutes=0
plain="$(one_record plain)"
ls -d "$tmp"/cache/*.ckpt 2>/dev/null && fail "a checkpoint directory without checkpoints"

# Checkpoints every 2 rounds (the run binary's arguments logged by a wrapper): the same numbers,
# and the directory is gone afterwards.
cat > "$tmp/run_logged.sh" <<WRAPPER
#!/usr/bin/env bash
echo "\$@" >> "$tmp/run_args.log"
exec "$run" "\$@"
WRAPPER
chmod +x "$tmp/run_logged.sh"
runner_in every2 --checkpoint_rounds=2 --run_binary="$tmp/run_logged.sh"
grep -q -- "--checkpoint_dir=$tmp/cache/.*\.ckpt --checkpoint_every=2 --resume" "$tmp/run_args.log" \
  || fail "runner did not ask for checkpoints: $(cat "$tmp/run_args.log")"
[[ "$(numbers "$(one_record every2)")" == "$(numbers "$plain")" ]] || fail "checkpointing changed the record"
ls -d "$tmp"/cache/*.ckpt 2>/dev/null && fail "checkpoint directory left after the record"

# An interrupted run: 3 rounds with a checkpoint after round 2 (rounds.jsonl then holds round 3,
# which the resumed run redoes), then the runner resumes it.
spec=("$tmp"/cache/*.spec.textproto)
[[ ${#spec[@]} == 1 ]] || fail "expected one spec in the cache, got ${spec[*]}"
stem="${spec[0]%.spec.textproto}"
rm -rf "$stem.out" && mkdir -p "$stem.ckpt"
"$run" --spec="${spec[0]}" --out="$stem.out" --checkpoint_dir="$stem.ckpt" --checkpoint_every=2 --rounds=3 \
    >/dev/null 2>"$tmp/interrupted.log" || { cat "$tmp/interrupted.log"; fail "interrupted run"; }
[[ -s "$stem.ckpt/checkpoint.pb" && -s "$stem.ckpt/peak_rss_bytes" ]] || fail "no checkpoint or peak file"
[[ "$(wc -l < "$stem.out/seed_2024/rounds.jsonl")" == 3 ]] || fail "interrupted run's rounds.jsonl"
echo 999999999999 > "$stem.ckpt/peak_rss_bytes"  # an earlier process's peak, higher than any real one
runner_in resumed --checkpoint_minutes=0
grep -q "resuming fedavg/c3 seed 2024" "$tmp/resumed.log" || { cat "$tmp/resumed.log"; fail "runner did not say it resumes"; }
grep -q "resumed from .* after round 2" "$stem.log" || { cat "$stem.log"; fail "run did not resume after round 2"; }
resumed="$(one_record resumed)"
[[ "$(numbers "$resumed")" == "$(numbers "$plain")" ]] \
  || fail "resumed record differs: $(diff <(numbers "$plain" | jq -S .) <(numbers "$resumed" | jq -S .))"
[[ "$(jq '.test_curve | length' "$resumed")" == 6 ]] || fail "resumed record's curve is not 6 rounds"
[[ "$(jq -r .peak_rss_bytes "$resumed")" == 999999999999 ]] || fail "the earlier processes' peak was not kept"
[[ -e "$stem.ckpt" ]] && fail "checkpoint directory left after the resumed record"

# A corrupt checkpoint: the run fails, the runner removes it, and the next runner starts afresh.
mkdir -p "$stem.ckpt" && echo "not a checkpoint" > "$stem.ckpt/checkpoint.pb"
"$runner" --table="$table" --results_dir="$tmp/corrupt/results" --cache_dir="$tmp/cache" \
    --report_dir="$tmp/corrupt/reports" --run_binary="$run" --jobs=1 >/dev/null 2>"$tmp/corrupt.log" || true
grep -q "removed its checkpoint" "$tmp/corrupt.log" || { cat "$tmp/corrupt.log"; fail "corrupt checkpoint kept"; }
[[ -e "$stem.ckpt/checkpoint.pb" ]] && fail "corrupt checkpoint still there"
runner_in afresh
[[ "$(numbers "$(one_record afresh)")" == "$(numbers "$plain")" ]] || fail "fresh run after a corrupt checkpoint differs"
echo PASS
