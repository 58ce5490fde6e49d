#!/usr/bin/env bash
# Issue #69: our whole run against the plain-PyTorch reference of the same job, timed in one go.
#
#   experiments/benchmarks/whole_run_benchmark.sh [--run BIN] [--clients_writer BIN] [--reps N]
#       [--threads "1 2"] [--rounds R] [--data_dir DIR] [--work DIR]
#
# --run: //experiments:run (default bazel-bin/experiments/run). --clients_writer: a binary that takes
# --spec=FederationSpec --out=FILE.npz and writes client<k>/{x,edge_index,y,train,val,test}:
# //methods/testing:trace (the default, bazel-bin/methods/testing/trace). The job is Cora, Louvain, 10 clients, FedAvg, R rounds
# (default 100), seed 2024. The clients are written once, untimed; both sides then run once untimed
# (so the partition cache, the page cache and Python's bytecode are warm for every timed run), then
# N times each (default 3), alternating ours, the reference (dense X), the reference (sparse X), at
# every thread count: ours with --threads=T, both with OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=T.
# Each process's wall time is taken from outside (date +%s.%N around it). Prints Markdown: the
# median wall times, their ratio (reference / ours), the accuracies, the reference's phases (medians),
# and the load average before and after (the numbers mean something only on a quiet machine).
set -euo pipefail

RUN=bazel-bin/experiments/run
WRITER=bazel-bin/methods/testing/trace
REPS=3
THREADS="1 2"
ROUNDS=100
DATA_DIR="${FGL_DATA_DIR:-/work/shared/data}"
WORK=""
PY=/usr/bin/python3  # Debian's python3-torch
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REF="$HERE/fedavg_reference.py"

die() { echo "whole_run_benchmark.sh: $*" >&2; exit 1; }
usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --run) RUN="$2"; shift 2 ;;
    --clients_writer) WRITER="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --data_dir) DATA_DIR="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "whole_run_benchmark.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
for b in "$RUN" "$WRITER"; do
  [[ -x "$b" ]] || die "'$b' is not an executable (bazel build it first)"
done
[[ -d "$DATA_DIR/cora" ]] || die "--data_dir '$DATA_DIR' has no cora/"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps '$REPS' is not a positive integer"
"$PY" -c "import torch" 2>/dev/null || die "$PY cannot import torch"
WORK="${WORK:-$(mktemp -d /tmp/whole_run_benchmark.XXXXXX)}"
mkdir -p "$WORK"

# Private copies: a rebuild of bazel-bin during the benchmark must not swap a binary between runs.
# A pinned binary (nn/pinned_binary.bzl) is a launcher that executes BIN.bin beside it: copy both.
cp "$RUN" "$WORK/run" && cp "$WRITER" "$WORK/clients_writer"
if [[ -e "$RUN.bin" ]]; then cp "$RUN.bin" "$WORK/run.bin"; fi
RUN="$WORK/run"

LOAD_START="$(uptime)"
SPEC="dataset: \"cora\" data_dir: \"$DATA_DIR\" partitioner: \"louvain\" clients: 10 method: \"fedavg\" rounds: 1"
"$WORK/clients_writer" --spec="$SPEC" --out="$WORK/clients.npz" >"$WORK/clients_writer.log" 2>&1 ||
  { cat "$WORK/clients_writer.log" >&2; echo "whole_run_benchmark.sh: writing the clients failed" >&2; exit 1; }

# ours T OUTDIR [ROUNDS]; ref T JSON [ROUNDS] [EXTRA]: one run, its wall seconds on stdout.
ours() {
  local t0 t1
  t0=$(date +%s.%N)
  OMP_NUM_THREADS="$1" OPENBLAS_NUM_THREADS="$1" "$RUN" --dataset=cora --partitioner=louvain --clients=10 \
      --method=fedavg --rounds="${3:-$ROUNDS}" --seeds=2024 --threads="$1" --data_dir="$DATA_DIR" --out="$2" \
      >"$2.stdout" 2>"$2.log" || { tail -5 "$2.log" >&2; echo "whole_run_benchmark.sh: our run failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
ref() {
  local t0 t1
  t0=$(date +%s.%N)
  OMP_NUM_THREADS="$1" OPENBLAS_NUM_THREADS="$1" "$PY" "$REF" --clients_npz="$WORK/clients.npz" \
      --rounds="${3:-$ROUNDS}" --epochs=3 --seed=2024 --threads="$1" ${4:-} >"$2" 2>"$2.log" ||
      { tail -5 "$2.log" >&2; echo "whole_run_benchmark.sh: the reference failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

w=$(ours 1 "$WORK/warm_ours" 1)
w=$(ref 1 "$WORK/warm_ref.json" 1)

: >"$WORK/times.tsv"  # threads, kind, rep, wall s, result file
for t in $THREADS; do
  for rep in $(seq 1 "$REPS"); do
    w=$(ours "$t" "$WORK/ours_t${t}_$rep")  # a failed run stops the script here (set -e)
    printf '%s\tours\t%s\t%s\t%s\n' "$t" "$rep" "$w" "$WORK/ours_t${t}_$rep/result.json" >>"$WORK/times.tsv"
    w=$(ref "$t" "$WORK/ref_t${t}_$rep.json")
    printf '%s\tref\t%s\t%s\t%s\n' "$t" "$rep" "$w" "$WORK/ref_t${t}_$rep.json" >>"$WORK/times.tsv"
    w=$(ref "$t" "$WORK/refs_t${t}_$rep.json" "$ROUNDS" --sparse_features)
    printf '%s\tref_sparse\t%s\t%s\t%s\n' "$t" "$rep" "$w" "$WORK/refs_t${t}_$rep.json" >>"$WORK/times.tsv"
  done
done
LOAD_END="$(uptime)"

"$PY" - "$WORK/times.tsv" "$LOAD_START" "$LOAD_END" "$REPS" "$ROUNDS" "$WORK" <<'EOF'
import collections, json, statistics, sys
tsv, load_start, load_end, reps, rounds, work = sys.argv[1:]
runs = collections.defaultdict(list)  # (threads, kind) -> [(wall, result)]
for line in open(tsv):
    t, kind, _, wall, path = line.rstrip('\n').split('\t')
    runs[(int(t), kind)].append((float(wall), json.load(open(path))))
med = lambda xs: statistics.median(xs)
fmt = lambda xs: ', '.join(f'{x:.1f}' for x in xs)
def accs(kind, t):
    return sorted({round(r['test_acc'], 2) for _, r in runs[(t, kind)]})
print(f'Cora, Louvain, 10 clients, FedAvg, GCN 64, {rounds} rounds x 3 epochs, seed 2024; '
      f'median of {reps} wall times per cell (seconds, from outside the process).\n')
print('| threads | ours (s) | reference, dense X (s) | ratio | reference, sparse X (s) | ratio '
      '| test acc ours | test acc ref dense | test acc ref sparse |')
print('|---|---|---|---|---|---|---|---|---|')
threads = sorted({t for t, _ in runs})
for t in threads:
    o, d, s = ([w for w, _ in runs[(t, k)]] for k in ('ours', 'ref', 'ref_sparse'))
    print(f'| {t} | {med(o):.2f} | {med(d):.2f} | {med(d) / med(o):.1f}x | {med(s):.2f} | {med(s) / med(o):.1f}x '
          f'| {accs("ours", t)} | {accs("ref", t)} | {accs("ref_sparse", t)} |')
print('\nPhases (medians, s). Ours: its result.json (wall_s: the run inside the process, train_s: the '
      'rounds). Reference: its own clocks; "start-up" is interpreter + import torch.\n')
print('| threads | side | process wall | start-up | load | set-up | rounds | train | aggregate | evaluate |')
print('|---|---|---|---|---|---|---|---|---|---|')
for t in threads:
    o = runs[(t, 'ours')]
    print(f'| {t} | ours | {med([w for w, _ in o]):.2f} | {med([w - r["wall_s"] for w, r in o]):.2f} (outside wall_s) '
          f'| - | - | {med([r["train_s"] for _, r in o]):.2f} | - | - | - |')
    for kind, name in (('ref', 'reference, dense X'), ('ref_sparse', 'reference, sparse X')):
        ph = [r['phases'] for _, r in runs[(t, kind)]]
        m = lambda k: med([p[k] for p in ph])
        print(f'| {t} | {name} | {med([w for w, _ in runs[(t, kind)]]):.2f} '
              f'| {m("interpreter_s") + m("import_torch_s"):.2f} | {m("load_s"):.2f} | {m("setup_s"):.2f} '
              f'| {m("rounds_s"):.2f} | {m("train_s"):.2f} | {m("aggregate_s"):.2f} | {m("evaluate_s"):.2f} |')
print('\nAll wall times (s): ' + '; '.join(f't={t} {k}: {fmt([w for w, _ in runs[(t, k)]])}'
                                          for t in threads for k in ('ours', 'ref', 'ref_sparse')))
print(f'\nLoad before: `{load_start.strip()}`  \nLoad after: `{load_end.strip()}`  \nRuns kept in {work}')
EOF
