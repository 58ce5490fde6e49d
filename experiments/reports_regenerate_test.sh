#!/usr/bin/env bash
# Every report made from run records regenerates byte for byte from the committed records alone
# (table runner with --cached_only: no runs), and so does the front page, experiments/reports/README.md. Reports from before records existed ("legacy", their
# runs lost with the machine that cached them) are listed, not checked, until their tables are
# rerun.
set -euo pipefail
runner="experiments/table_runner"
if [[ -z "${FGL_DATA_DIR:-}" ]]; then
  echo "SKIP: FGL_DATA_DIR is not set (which cells read 'data not present' depends on the data)"
  exit 0
fi
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
checked=0
legacy=0
for md in experiments/reports/*/*.md; do
  paper="$(basename "$(dirname "$md")")"
  stem="$(basename "$md" .md)"
  if ! grep -q "Generated from the run records" "$md"; then
    echo "legacy report (not from committed records): $md"
    legacy=$((legacy + 1))
    continue
  fi
  "$runner" --table="experiments/$paper/$stem.textproto" --cached_only --results_dir=experiments/results \
      --report_dir="$T/reports" --cache_dir="$T/cache" --data_dir="$FGL_DATA_DIR" >"$T/log" 2>&1 \
      || { cat "$T/log"; echo "FAIL: the runner failed on $md"; exit 1; }
  # Plus the curve files a figure report links (<stem>_<column>.svg, _loss.svg, _curves.csv).
  linked="$(grep -o "](${stem}_[A-Za-z0-9_]*\.\(svg\|csv\))" "$md" | sed 's/^](//; s/)$//' | sort -u || true)"
  for file in "$stem.md" "$stem.csv" "$stem.svg" "${stem}_fidelity.svg" $linked; do
    committed="experiments/reports/$paper/$file"
    [[ -f "$committed" ]] || continue
    if ! cmp -s "$committed" "$T/reports/$paper/$file"; then
      diff "$committed" "$T/reports/$paper/$file" | head -20
      echo "FAIL: $committed differs from its regeneration from experiments/results"
      exit 1
    fi
  done
  checked=$((checked + 1))
done
# The front page (experiments/reports/README.md, //experiments:front_page) and its figures, from the
# same records, tables and reports.
mkdir -p "$T/front"
experiments/front_page --tables_dir=experiments --results_dir=experiments/results \
    --reports_dir=experiments/reports --out_dir="$T/front" --data_dir="$FGL_DATA_DIR" >"$T/log" 2>&1 \
    || { cat "$T/log"; echo "FAIL: the front page generator failed"; exit 1; }
for file in README.md front_page_cells.svg front_page_gains.svg; do
  committed="experiments/reports/$file"
  if [[ ! -f "$committed" || ! -f "$T/front/$file" ]] || ! cmp -s "$committed" "$T/front/$file"; then
    if [[ -f "$committed" && -f "$T/front/$file" ]]; then diff "$committed" "$T/front/$file" | head -20 || true; fi
    echo "FAIL: $committed differs from its regeneration (bazel run //experiments:front_page), or one is missing"
    exit 1
  fi
done
echo "PASS: $checked reports and the front page regenerate byte for byte from experiments/results; $legacy legacy"
