#!/usr/bin/env bash
# The budget's timed rounds: --budget_time_rounds times a configuration without records once,
# commits the timing under <results>/timings, and later budgets read it (without timing again); a
# timing whose file name is not its key's hash is ignored; dropout rates do not split a configuration.
set -euo pipefail
runner="experiments/table_runner"
run="$(pwd)/experiments/run"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
table="$tmp/paper/budget.textproto"
mkdir -p "$tmp/paper"
cat > "$table" <<'TABLE'
id: "budget_test"
title: "budget test"
paper: "none"
metric: "test accuracy (%)"
base {
  name: "budget_test"
  dataset: "csbm:num_nodes=300"
  partitioner: "louvain"
  clients: 3
  method: "fedavg"
  rounds: 40
  local_epochs: 1
  seeds: [2024, 2025]
}
rows { key: "d1" label: "dropout 0.1" overrides { model: "gcn:layers=2,hidden=16,dropout=0.1" } }
rows { key: "d5" label: "dropout 0.5" overrides { model: "gcn:layers=2,hidden=16,dropout=0.5" } }
columns { key: "c3" label: "3 clients" overrides { clients: 3 } }
cells { row: "d1" column: "c3" paper { mean: 50 present: true } }
cells { row: "d5" column: "c3" paper { mean: 50 present: true } }
partition_spread { rows: "d1" partition_seeds: [9] }
TABLE
args=(--table="$table" --budget --results_dir="$tmp/results" --cache_dir="$tmp/cache" --report_dir="$tmp/reports"
      --run_binary="$run")
fail() { echo "FAIL: $*"; exit 1; }

out="$("$runner" "${args[@]}" 2>"$tmp/log0")" || { cat "$tmp/log0"; fail "budget without timings"; }
# 4 cell runs and 2 on the spread row's further partition, counted apart.
grep -q "| \*\*total\*\* | 0 / 2 | 0 | 0.00 | 6 (2 partition spread) | 0.00 + 6 runs unknown |" <<<"$out" || fail "no timing: $out"

out="$("$runner" "${args[@]}" --budget_time_rounds=2 2>"$tmp/log1")" || { cat "$tmp/log1"; fail "timing"; }
[[ "$(grep -c '^timing 2 rounds' "$tmp/log1")" == 1 ]] || { cat "$tmp/log1"; fail "expected one configuration timed (dropout rates are one configuration)"; }
files=("$tmp"/results/timings/*.json)
[[ ${#files[@]} == 1 && -s "${files[0]}" ]] || fail "expected one timing file, got ${files[*]}"
grep -q '"rounds_timed":2' "${files[0]}" || fail "timing file: $(cat "${files[0]}")"
# 6 runs of 40 rounds each: load_s + train_s x 40 / 2 each, in the total's estimate column.
grep -qE '\| \*\*total\*\* \| 0 / 2 \| 0 \| 0\.00 \| 6 \(2 partition spread\) \| [0-9.]+ \([0-9.]+ from timed rounds\) \|' <<<"$out" \
  || fail "timed estimate not in the total: $out"
jq -e '(.load_s + .train_s * .rounds / .rounds_timed) as $w
       | .rounds == 40 and ((.estimate_s - $w) | if . < 0 then -. else . end) < 1e-6' "${files[0]}" >/dev/null \
  || fail "estimate_s is not load_s + train_s x rounds / rounds_timed: $(cat "${files[0]}")"
grep -q 'runs unknown' <<<"$out" && fail "runs still unknown after timing: $out"

# A later budget reads the committed timing and times nothing.
out2="$("$runner" "${args[@]}" --budget_time_rounds=2 2>"$tmp/log2")" || { cat "$tmp/log2"; fail "second budget"; }
grep -q '^timing' "$tmp/log2" && fail "timed again: $(cat "$tmp/log2")"
[[ "$(grep total <<<"$out")" == "$(grep total <<<"$out2")" ]] || fail "estimate changed: $out / $out2"

# The runs file: each missing run once, with the timed estimate.
"$runner" "${args[@]}" --budget_runs_out="$tmp/runs.tsv" >/dev/null 2>"$tmp/log_runs" || { cat "$tmp/log_runs"; fail "runs file"; }
[[ "$(grep -c $'^missing\t[0-9a-f]*\t[0-9.e+-]*\ttimed\tcell$' "$tmp/runs.tsv")" == 4 ]] || fail "runs file: $(cat "$tmp/runs.tsv")"
[[ "$(grep -c $'^missing\t[0-9a-f]*\t[0-9.e+-]*\ttimed\tspread$' "$tmp/runs.tsv")" == 2 ]] || fail "runs file: $(cat "$tmp/runs.tsv")"

# budget.sh over the same table twice: its cells count twice, its runs once.
all="$(bash experiments/budget.sh "$table" "$table" --results_dir="$tmp/results" --cache_dir="$tmp/cache" \
       --run_binary="$run" 2>"$tmp/log_all")" || { cat "$tmp/log_all"; fail "budget.sh"; }
grep -qE '^\| \*\*all tables\*\* \(a run shared by several tables counted once\) \| 0 / 4 \| 0 \| 0\.00 \| 6 \(2 partition spread\) \| ' <<<"$all" \
  || fail "budget.sh totals: $all"

# --stop_by: with the stop time past, no run starts (a started /bin/false would fail the cell) and
# the cells read "not run"; with an hour left, the timed runs (seconds each) start and fill them.
stop_args=(--table="$table" --results_dir="$tmp/results" --cache_dir="$tmp/cache" --report_dir="$tmp/reports" --jobs=1)
"$runner" "${stop_args[@]}" --run_binary=/bin/false --stop_by="$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)" \
  >/dev/null 2>"$tmp/log_stop" || { cat "$tmp/log_stop"; fail "--stop_by in the past"; }
[[ "$(grep -c 'not started (--stop_by)' "$tmp/log_stop")" == 6 ]] || { cat "$tmp/log_stop"; fail "expected 6 runs not started"; }
[[ "$(grep -c 'not run' "$tmp/reports/paper/budget.md")" -ge 2 ]] || fail "cells not marked not run: $(cat "$tmp/reports/paper/budget.md")"
"$runner" "${stop_args[@]}" --run_binary="$run" --stop_by="$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)" \
  >/dev/null 2>"$tmp/log_stop2" || { cat "$tmp/log_stop2"; fail "--stop_by an hour ahead"; }
grep -q 'not started' "$tmp/log_stop2" && fail "a run that fits was not started: $(cat "$tmp/log_stop2")"
[[ "$(ls "$tmp"/results/*.json | wc -l)" == 6 ]] || fail "expected 6 run records: $(ls "$tmp/results")"

# A configuration with neither records nor a timing (5 clients) is priced by the records of the
# nearest client count (3), labelled as such, in the table and in the runs file.
table5="$tmp/paper/budget5.textproto"
sed 's/overrides { clients: 3 }/overrides { clients: 5 }/' "$table" > "$table5"
out5="$("$runner" "${args[@]/--table=*/--table=$table5}" --budget_runs_out="$tmp/runs5.tsv" 2>"$tmp/log5")" \
  || { cat "$tmp/log5"; fail "budget of 5 clients"; }
grep -qE '\| \*\*total\*\* \| 0 / 2 \| 0 \| 0\.00 \| 6 \(2 partition spread\) \| [0-9.]+ \([0-9.]+ from other client counts\) \|' \
  <<<"$out5" || fail "5 clients not priced by the 3-client records: $out5"
grep -q 'as fedavg|csbm:num_nodes=300|3|' <<<"$out5" || fail "the neighbour is not named: $out5"
[[ "$(grep -c $'\tother_clients\t' "$tmp/runs5.tsv")" == 6 ]] || fail "runs file: $(cat "$tmp/runs5.tsv")"
rm -f "$tmp"/results/*.json

# A timing under another name is not its configuration's: ignored, with a warning naming the file.
mv "${files[0]}" "$tmp/results/timings/0000000000000000.json"
out3="$("$runner" "${args[@]}" 2>"$tmp/log3")" || { cat "$tmp/log3"; fail "third budget"; }
grep -q "0000000000000000.json: not a timing of its configuration" "$tmp/log3" || { cat "$tmp/log3"; fail "no warning"; }
grep -q "6 runs unknown" <<<"$out3" || fail "misnamed timing was used: $out3"
echo "PASS"
