#!/usr/bin/env bash
# Per-round cost of the gRPC transport against the in-process simulator, FedAvg on 10 Louvain
# clients (Cora-10 and Coauthor-Physics-10 by default), from the runs' own round logs.
#
#   bazel run //experiments:transport_benchmark -- [--rounds=20] [--datasets=cora,coauthor_physics]
#       [--out=DIR]
#
# Simulator: one process, --threads=2 (two clients at a time, one intra-op thread each).
# Transport, two placements on 127.0.0.1 (one intra-op thread per client in both):
#   processes: one server and 10 client processes (10 processes share the cores: the OS
#              interleaves them, which the simulator never does);
#   one-site:  one server and one client process hosting the 10 clients, 2 computing at a time
#              (the simulator's compute schedule: what remains is the transport's own cost).
# Both time the same thing per round: broadcast, local training, aggregation and evaluation.
# Round 1 (start-up) is left out of the means. Needs $FGL_DATA_DIR.
set -euo pipefail

ROUNDS=20
DATASETS="cora,coauthor_physics"
OUT=""
for a in "$@"; do
  case "$a" in
    --rounds=*) ROUNDS="${a#*=}" ;;
    --datasets=*) DATASETS="${a#*=}" ;;
    --out=*) OUT="${a#*=}" ;;
    *) echo "unknown argument $a" >&2; exit 2 ;;
  esac
done
[[ -n "${FGL_DATA_DIR:-}" ]] || { echo "set FGL_DATA_DIR to the datasets' root" >&2; exit 2; }
BIN="$(pwd)"
T="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT

mean_seconds() {  # mean "seconds" over rounds >= 2 of a rounds.jsonl
  jq -r '"\(.round) \(.seconds)"' "$1" |
    awk '$1 >= 2 { s += $2; n++ } END { if (n) printf "%.4f", s / n; else print "nan" }'
}

echo "| dataset | clients | rounds | placement | simulator s/round | transport s/round | overhead | payload MB/round (up+down) | wire MB/round | evaluation MB/round | final model |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for ds in ${DATASETS//,/ }; do
  spec="$T/$ds.textproto"
  cat >"$spec" <<SPEC
name: "transport_benchmark_$ds"
dataset: "$ds"
partitioner: "louvain"
clients: 10
method: "fedavg"
model: "gcn:layers=2,hidden=64,dropout=0.5"
rounds: $ROUNDS
local_epochs: 3
seeds: [2024]
SPEC
  "$BIN/experiments/run" --spec="$spec" --threads=2 --out="$T/sim_$ds" >"$T/sim_$ds.out" 2>"$T/sim_$ds.log"
  sim="$(mean_seconds "$T/sim_$ds/seed_2024/rounds.jsonl")"
  for placement in processes one-site; do
    run="${placement}_$ds"
    rm -f "$T/port_$run"
    "$BIN/experiments/serve" --spec="$spec" --listen=127.0.0.1:0 --port_file="$T/port_$run" \
        --out="$T/$run" >"$T/$run.out" 2>"$T/$run.log" &
    server=$!
    for _ in $(seq 1 100); do [[ -s "$T/port_$run" ]] && break; sleep 0.1; done
    port="$(cat "$T/port_$run")"
    if [[ "$placement" == processes ]]; then
      for k in $(seq 0 9); do
        "$BIN/experiments/join" --spec="$spec" --server="127.0.0.1:$port" --client_id="$k" \
            >"$T/${run}_client$k.log" 2>&1 &
      done
    else
      "$BIN/experiments/join" --spec="$spec" --server="127.0.0.1:$port" --client_ids=0-9 \
          --parallel=2 >"$T/${run}_clients.log" 2>&1 &
    fi
    wait "$server"
    wait
    tr="$(mean_seconds "$T/$run/rounds.jsonl")"
    field() { jq -r --arg k "$2" '.transport[$k] // .[$k] // empty' "$1" | head -1; }
    up="$(field "$T/$run.out" payload_up)"; down="$(field "$T/$run.out" payload_down)"
    wup="$(field "$T/$run.out" wire_up)"; wdown="$(field "$T/$run.out" wire_down)"
    eup="$(field "$T/$run.out" eval_up)"; edown="$(field "$T/$run.out" eval_down)"
    same="differs"
    cmp -s "$T/sim_$ds/seed_2024/final_model.pb" "$T/$run/final_model.pb" && same="bit-identical"
    awk -v ds="$ds" -v r="$ROUNDS" -v p="$placement" -v s="$sim" -v t="$tr" -v u="$up" -v d="$down" \
        -v wu="$wup" -v wd="$wdown" -v eu="$eup" -v ed="$edown" -v same="$same" 'BEGIN {
      printf "| %s | 10 | %d | %s | %.4f | %.4f | %+.1f%% | %.2f | %.2f | %.2f | %s |\n", ds, r, p, s, t,
        100 * (t - s) / s, (u + d) / r / 1e6, (wu + wd) / r / 1e6, (eu + ed) / r / 1e6, same }'
  done
  if [[ -n "$OUT" ]]; then mkdir -p "$OUT" && cp -r "$T"/* "$OUT/"; fi
done
