#!/usr/bin/env bash
# fedavg_reference.py on real clients for 2 rounds: Cora's 10 Louvain clients when $FGL_DATA_DIR
# holds Cora, else a synthetic graph's (the test then needs no data files). It must print one JSON
# object with an accuracy in (0, 100] and every phase whole_run_benchmark.sh and README.md name,
# and refuse an .npz without clients with a message naming the file.
set -euo pipefail

PY=/usr/bin/python3  # Debian's python3-torch, whatever python3 comes first on PATH
REF="experiments/benchmarks/fedavg_reference.py"
TRACE="methods/testing/trace"  # writes every client's data (and the rounds' messages)
T="${TEST_TMPDIR:-$(mktemp -d)}/fedavg_reference"
rm -rf "$T" && mkdir -p "$T"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PY" -c "import torch" 2>/dev/null ||
  fail "$PY cannot import torch; third_party/install_deps.sh installs python3-torch"

if [[ -n "${FGL_DATA_DIR:-}" && -d "$FGL_DATA_DIR/cora" ]]; then
  SPEC="dataset: \"cora\" data_dir: \"$FGL_DATA_DIR\" partitioner: \"louvain\" clients: 10 method: \"fedavg\" rounds: 2"
else
  echo "FGL_DATA_DIR has no cora: a synthetic graph instead"
  SPEC='dataset: "csbm:num_nodes=300" partitioner: "louvain" clients: 10 method: "fedavg" rounds: 2'
fi
"$TRACE" --spec="$SPEC" --out="$T/clients.npz" >"$T/trace.log" 2>&1 ||
  { cat "$T/trace.log"; fail "the trace binary failed"; }

"$PY" "$REF" --clients_npz="$T/clients.npz" --rounds=2 --epochs=3 --seed=1 --threads=1 >"$T/out.json" 2>"$T/err.log" ||
  { cat "$T/err.log"; fail "the reference failed"; }
"$PY" - "$T/out.json" <<'EOF' || fail "bad output: $(cat "$T/out.json")"
import json, math, sys
r = json.load(open(sys.argv[1]))
assert 0 < r['test_acc'] <= 100, r['test_acc']
assert 0 < r['val_acc'] <= 100, r['val_acc']
assert r['best_round'] in (1, 2) and r['rounds'] == 2 and r['clients'] == 10, r
phases = ('interpreter_s', 'import_torch_s', 'load_s', 'setup_s', 'rounds_s', 'train_s', 'aggregate_s',
          'evaluate_s', 'total_s')
for p in phases:
    assert math.isfinite(r['phases'][p]) and r['phases'][p] >= 0, (p, r['phases'])
ph = r['phases']
assert ph['train_s'] + ph['aggregate_s'] + ph['evaluate_s'] <= ph['rounds_s'] + 1e-3, ph
assert ph['rounds_s'] <= ph['total_s'] + 0.02, ph  # total_s has clock-tick (10 ms) resolution
print('ok:', r['test_acc'], ph)
EOF

# An archive without client<k>/train members: refused, naming the file.
"$PY" -c "import numpy, sys; numpy.savez(sys.argv[1], other=numpy.zeros(3))" "$T/empty.npz"
if "$PY" "$REF" --clients_npz="$T/empty.npz" --rounds=1 >"$T/empty.out" 2>&1; then
  fail "an .npz without clients was accepted"
fi
grep -q "empty.npz: no client0" "$T/empty.out" || fail "unclear error: $(cat "$T/empty.out")"
echo PASS
