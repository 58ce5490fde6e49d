#!/usr/bin/env bash
# Runs the table runner on the table(s) given as data; extra args pass through (e.g. --quick).
# Used by the per-table targets (experiments/tables.bzl).
set -euo pipefail
runner="experiments/table_runner"
status=0
tables=()
args=()
for a in "$@"; do
  if [[ "$a" == *.textproto ]]; then tables+=("$a"); else args+=("$a"); fi
done
for t in "${tables[@]}"; do
  "$runner" --table="$t" "${args[@]+"${args[@]}"}" || status=1
done
exit $status
