#!/usr/bin/env bash
# experiments/slurm/federation.sbatch under a fake srun/scontrol (one host): the server and two
# client tasks (clients 0,2 and 1) must compute the simulator's run bit for bit, and bad
# allocations and arguments are refused with a message.
set -uo pipefail
SBATCH_SCRIPT="experiments/slurm/federation.sbatch"
SPEC="experiments/testdata/transport_csbm_fedavg.textproto"
T="${TEST_TMPDIR:-$(mktemp -d)}/federation"
rm -rf "$T" && mkdir -p "$T"
export PATH="$PWD/experiments/testdata/fake_slurm:$PATH" FAKE_SLURM_DIR="$T/slurm" FGL_BIN=experiments
export FGL_CACHE_DIR="$T/cache" XDG_RUNTIME_DIR="$T/xdg"
mkdir -p "$FAKE_SLURM_DIR"

fail() { echo "FAIL: $*"; for f in "$T"/fed/*.log "$T"/*.log; do [[ -f "$f" ]] && { echo "--- $f"; tail -n 20 "$f"; }; done; exit 1; }

experiments/run --spec="$SPEC" --out="$T/sim" --cache_dir="$T/cache" > "$T/sim.out" 2> "$T/sim.log" || fail "simulator failed"

SLURM_NTASKS=3 SLURM_JOB_NODELIST="node[1-2]" timeout 300 bash "$SBATCH_SCRIPT" "$SPEC" 3 "$T/fed" > "$T/job.log" 2>&1 \
  || fail "the job failed: $(tail -n 5 "$T/job.log")"
cmp -s "$T/sim/seed_2024/final_model.pb" "$T/fed/final_model.pb" || fail "the cluster run's final model differs from the simulator's"
for key in test_acc val_acc; do
  a="$(jq -r ".$key" "$T/sim.out")"; b="$(jq -r ".$key" "$T/fed/result.jsonl")"
  [[ -n "$a" && "$a" == "$b" ]] || fail "$key: simulator $a, cluster $b"
done
grep -q -- "--client_ids=0,2 " "$T/fed/client_task_0.log" 2>/dev/null || true
[[ "$(stat -c %a "$T/fed/tokens")" == 600 ]] || fail "tokens are readable by others: $(stat -c %a "$T/fed/tokens")"
grep -q "ntasks=2 bash" "$FAKE_SLURM_DIR/srun.args" || fail "clients were not started as one srun of 2 tasks: $(cat "$FAKE_SLURM_DIR/srun.args")"
echo "PASS: server + 2 client tasks (3 clients) bit-identical to the simulator"

# refused: prints why and exits 2, starting nothing
refused() {  # refused WHAT NTASKS ARGS...
  local what="$1" ntasks="$2"; shift 2
  : > "$FAKE_SLURM_DIR/srun.args"
  SLURM_NTASKS="$ntasks" SLURM_JOB_NODELIST="node1" bash "$SBATCH_SCRIPT" "$@" > "$T/refused.log" 2>&1
  local status=$?
  [[ $status == 2 ]] || fail "$what: exit $status, expected 2"
  grep -q "$what" "$T/refused.log" || fail "$what: message was '$(cat "$T/refused.log")'"
  [[ ! -s "$FAKE_SLURM_DIR/srun.args" ]] || fail "$what: srun was called"
}
refused "at least 2 tasks" 1 "$SPEC" 3 "$T/r1"
refused "ask for at most 4 tasks" 5 "$SPEC" 3 "$T/r2"
refused "cannot read the spec" 3 "$T/no_such.textproto" 3 "$T/r3"
refused "CLIENTS must be a positive integer" 3 "$SPEC" three "$T/r4"
refused "usage" 3 "$SPEC"
echo "PASS: bad allocations and arguments refused"
