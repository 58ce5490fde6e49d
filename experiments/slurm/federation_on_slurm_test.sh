#!/usr/bin/env bash
# federation.sbatch against a real Slurm (issue #66): on a one-node cluster from Debian's packages
# (local_cluster.sh, under the test's temporary directory), `sbatch --ntasks=3 --overcommit` runs the
# server and 3 clients over 2 client tasks, each started by the real srun; the final model is the
# simulator's (//experiments:run) bit for bit, and so are the accuracies. Prints the job's time
# from submission to its end.
set -euo pipefail
SPEC="$(pwd)/experiments/testdata/transport_csbm_fedavg.textproto"
cluster_sh="$(pwd)/experiments/slurm/local_cluster.sh"
tmp="${TEST_TMPDIR:-$(mktemp -d)}/federation_on_slurm"
rm -rf "$tmp" && mkdir -p "$tmp"
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/job.out "$tmp"/fed/*.log "$tmp"/cluster/log/slurm{ctld,d}.log; do [[ -f "$f" ]] && { echo "--- $f"; tail -n 20 "$f"; }; done
  exit 1
}

bash "$cluster_sh" start "$tmp/cluster" || fail "could not start the local Slurm cluster"
trap 'bash "$cluster_sh" stop "$tmp/cluster"' EXIT
source "$tmp/cluster/env"

experiments/run --spec="$SPEC" --out="$tmp/sim" --cache_dir="$tmp/cache" > "$tmp/sim.out" 2> "$tmp/sim.log" \
  || fail "simulator failed: $(tail -n 5 "$tmp/sim.log")"

# 3 tasks on a node of 2 CPUs (CI): --overcommit gives the job one CPU for all of them, which the
# script's two steps share (srun --overlap). The server listens on the node's name, "localhost":
# loopback, so plaintext needs no FGL_ALLOW_INSECURE.
FGL_BIN="$(pwd)/experiments"
export FGL_BIN FGL_CACHE_DIR="$tmp/cache"
t0="$(date +%s.%N)"
job="$(sbatch --parsable --ntasks=3 --overcommit --mem=2G --time=10 --output="$tmp/job.out" \
  "$(pwd)/experiments/slurm/federation.sbatch" "$SPEC" 3 "$tmp/fed")" || fail "sbatch refused the job"
for _ in $(seq 1 600); do
  [[ -z "$(squeue -h -j "$job" -o %T)" ]] && break
  sleep 0.2
done
t1="$(date +%s.%N)"
if [[ -n "$(squeue -h -j "$job" -o %T)" ]]; then
  scancel "$job" || true
  fail "job $job still queued after 120 s"
fi
state="$(scontrol -o show job "$job" | grep -oE 'JobState=[A-Z_]+' || true)"
[[ "$state" == JobState=COMPLETED ]] || fail "job $job: $state"
grep -q "server on localhost:[0-9]*; 3 clients over 2 tasks" "$tmp/job.out" || fail "no server line in the job's output"
cmp -s "$tmp/sim/seed_2024/final_model.pb" "$tmp/fed/final_model.pb" || fail "the Slurm run's final model differs from the simulator's"
for key in test_acc val_acc; do
  a="$(jq -r ".$key" "$tmp/sim.out")"; b="$(jq -r ".$key" "$tmp/fed/result.jsonl")"
  [[ -n "$a" && "$a" == "$b" ]] || fail "$key: simulator $a, Slurm $b"
done
for k in 0 1; do [[ -f "$tmp/fed/client_task_$k.log" ]] || fail "client task $k left no log"; done
awk -v t0="$t0" -v t1="$t1" 'BEGIN { printf "PASS: server + 2 client tasks (3 clients) on Slurm bit-identical to the simulator; sbatch to job end %.1f s\n", t1 - t0 }'
