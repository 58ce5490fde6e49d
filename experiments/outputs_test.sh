#!/usr/bin/env bash
# Issue #68 end to end, on the synthetic graph (no data files), in four parts:
#  (2) a full disk fails //experiments:run and //experiments:serve with an error naming the file
#      (was: exit 0 with result.json and final_model.pb empty, rounds.jsonl cut). A file size limit
#      (ulimit -f, SIGXFSZ ignored) makes writes fail as a full disk does, without root.
#  (3) serve --resume into the same --out keeps rounds.jsonl whole: equal to an uninterrupted run's
#      but for the timings (was: truncated to the rounds after the checkpoint).
#  (10) bad flag values are refused at once, naming the flag.
set -uo pipefail

SPEC="experiments/testdata/transport_csbm_fedavg.textproto"
SIM="experiments/run"
SERVER="experiments/serve"
CLIENT="experiments/join"
T="${TEST_TMPDIR:-$(mktemp -d)}/outputs"
rm -rf "$T" && mkdir -p "$T"
CACHE="$T/cache"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.log; do echo "--- $f"; tail -15 "$f"; done; exit 1; }

# limited KIB NAME CMD...: runs CMD with files limited to KIB KiB, its output in $T/NAME.log through a
# pipe (not limited); sets STATUS to CMD's exit status.
limited() {
  local kib="$1" name="$2"; shift 2
  (trap '' XFSZ; ulimit -f "$kib"; exec "$@") 2>&1 | cat >"$T/$name.log"
  STATUS=${PIPESTATUS[0]}
}

printf '0 tok-zero\n1 tok-one\n2 tok-two\n' >"$T/tokens"
# start_server NAME ARGS...: the server in the background (SERVER_PID), its port in PORT.
start_server() {
  local name="$1"; shift
  "$SERVER" --spec="$SPEC" --listen=127.0.0.1:0 --port_file="$T/$name.port" --tokens_file="$T/tokens" \
      --round_deadline_s=30 --join_timeout_s=60 "$@" >"$T/$name.out" 2>"$T/$name.log" &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  wait_port "$name"
}
wait_port() {
  for _ in $(seq 1 150); do [[ -s "$T/$1.port" ]] && break; sleep 0.1; done
  [[ -s "$T/$1.port" ]] || fail "server $1 did not start"
  PORT="$(cat "$T/$1.port")"
}
start_clients() {  # start_clients NAME: clients 0-2 of the server on PORT
  local tokens=(tok-zero tok-one tok-two) k
  for k in 0 1 2; do
    "$CLIENT" --spec="$SPEC" --server="127.0.0.1:$PORT" --client_id="$k" --token="${tokens[$k]}" \
        --cache_dir="$CACHE" --reconnect_s=20 >"$T/$1_client$k.log" 2>&1 &
    PIDS+=("$!")
  done
}

# Warm the partition cache: writes under the limit below must be the outputs' only.
"$SIM" --spec="$SPEC" --out="$T/plain" --cache_dir="$CACHE" >"$T/plain.out" 2>"$T/plain.log" || fail "plain run failed"
[[ -s "$T/plain/seed_2024/final_model.pb" ]] || fail "plain run wrote no final model"
(( $(stat -c %s "$T/plain/seed_2024/rounds.jsonl") > 2048 )) || fail "rounds.jsonl too small for the 2 KiB limit"

echo "--- (2) full disk: run"
# rounds.jsonl passes 2 KiB in round 3.
limited 2 full_rounds "$SIM" --spec="$SPEC" --out="$T/full_rounds" --cache_dir="$CACHE"
[[ $STATUS -ne 0 ]] || fail "run exited 0 with rounds.jsonl cut"
grep -q "cannot write $T/full_rounds/seed_2024/rounds.jsonl: File too large" "$T/full_rounds.log" \
  || fail "run's error does not name rounds.jsonl"
grep "cannot write" "$T/full_rounds.log" | tail -1
# One round: rounds.jsonl and result.json fit, the 4.6 KB model does not.
limited 2 full_model "$SIM" --spec="$SPEC" --set="rounds=1" --out="$T/full_model" --cache_dir="$CACHE"
[[ $STATUS -ne 0 ]] || fail "run exited 0 without its final model"
grep -q "cannot write $T/full_model/seed_2024/final_model.pb: File too large" "$T/full_model.log" \
  || fail "run's error does not name final_model.pb"
grep "cannot write" "$T/full_model.log" | tail -1
[[ ! -e "$T/full_model/seed_2024/final_model.pb" ]] || fail "a partial final_model.pb was left"
ls "$T/full_model/seed_2024/" | grep -q '\.tmp$' && fail "a temporary file was left"
# A directory that cannot be made (a file is in the way).
touch "$T/blocker"
"$SIM" --spec="$SPEC" --out="$T/blocker/out" --cache_dir="$CACHE" >/dev/null 2>"$T/blocked.log" && fail "run exited 0 without --out"
grep -q "$T/blocker" "$T/blocked.log" || fail "unwritable --out not named"

echo "--- (2) full disk: serve"
(trap '' XFSZ; ulimit -f 2; exec "$SERVER" --spec="$SPEC" --listen=127.0.0.1:0 --port_file="$T/full_serve.port" \
    --tokens_file="$T/tokens" --round_deadline_s=30 --join_timeout_s=60 --out="$T/full_serve") >"$T/full_serve.out" \
    2> >(cat >"$T/full_serve.log") &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
wait_port full_serve
start_clients full_serve
wait "$SERVER_PID"; STATUS=$?
[[ $STATUS -ne 0 ]] || fail "serve exited 0 with rounds.jsonl cut"
sleep 0.5  # the log's reader
grep -q "cannot write $T/full_serve/rounds.jsonl: File too large" "$T/full_serve.log" \
  || fail "serve's error does not name rounds.jsonl"
grep "cannot write" "$T/full_serve.log" | tail -1

echo "--- (3) serve --resume into the same --out"
start_server whole --out="$T/whole"
start_clients whole
wait "$SERVER_PID" || fail "uninterrupted server failed"
mkdir -p "$T/ckpt"
start_server resumed --out="$T/resumed" --checkpoint_dir="$T/ckpt" --testonly_kill_after_checkpoint=3
first=$SERVER_PID
start_clients resumed
wait "$first"; STATUS=$?
[[ $STATUS -eq 137 ]] || fail "server exited with $STATUS, not by SIGKILL"
# Round r's record comes with round r + 1's tasks (its evaluation rides on them): the killed
# server's file holds rounds 1-2, and the resumed one rounds 3-6.
[[ "$(jq -r .round "$T/resumed/rounds.jsonl" | tr '\n' ' ')" == "1 2 " ]] \
  || fail "the killed server's rounds.jsonl holds rounds $(jq -r .round "$T/resumed/rounds.jsonl" | tr '\n' ' ')"
rm -f "$T/resumed.port"
start_server resumed --listen="127.0.0.1:$PORT" --out="$T/resumed" --checkpoint_dir="$T/ckpt" --resume
wait "$SERVER_PID" || fail "resumed server failed"
grep -q "resumed from .* after round 3" "$T/resumed.log" || fail "server did not resume after round 3"
# The rounds without their timings.
untimed() { jq -cS 'del(.seconds) | if .clients then .clients |= map(del(.seconds)) else . end' "$1"; }
[[ "$(jq -r .round "$T/resumed/rounds.jsonl" | tr '\n' ' ')" == "1 2 3 4 5 6 " ]] \
  || fail "rounds.jsonl after the resume holds rounds $(jq -r .round "$T/resumed/rounds.jsonl" | tr '\n' ' ')"
diff <(untimed "$T/whole/rounds.jsonl") <(untimed "$T/resumed/rounds.jsonl") >"$T/rounds.diff" \
  || { cat "$T/rounds.diff" | head -20; fail "resumed rounds.jsonl differs from the uninterrupted run's"; }
cmp -s "$T/whole/final_model.pb" "$T/resumed/final_model.pb" || fail "resumed final model differs"

echo "--- (10) flags"
refused() {  # refused WHAT BINARY ARGS...: the binary exits 1 at once with WHAT in its error
  local what="$1"; shift
  timeout 60 "$@" >/dev/null 2>"$T/flag.log"; local status=$?
  [[ $status -eq 1 ]] || fail "$* exited $status, not 1"
  grep -qF -- "$what" "$T/flag.log" || fail "$*: error does not say '$what': $(tail -1 "$T/flag.log")"
}
refused "empty value" "$SIM" --method= --dataset=csbm --rounds=1 --out="$T/flags"
refused "empty value" "$SIM" --dataset= --rounds=1 --out="$T/flags"
refused "empty value" "$SIM" --spec="$SPEC" --set="method=" --out="$T/flags"
refused "clients=3 rounds: 1" "$SIM" --spec="$SPEC" --set="clients=3 rounds: 1" --out="$T/flags"
[[ ! -e "$T/flags" ]] || fail "a refused run wrote output"
refused "clients=3 rounds: 1" "$SERVER" --spec="$SPEC" --set="clients=3 rounds: 1" --listen=127.0.0.1:0
refused "--join_timeout_s=1e+300" "$SERVER" --spec="$SPEC" --listen=127.0.0.1:0 --join_timeout_s=1e300
refused "--join_timeout_s=nan" "$SERVER" --spec="$SPEC" --listen=127.0.0.1:0 --join_timeout_s=nan
refused "--round_deadline_s=0" "$SERVER" --spec="$SPEC" --listen=127.0.0.1:0 --round_deadline_s=0
refused "--min_clients=4: must be in [0, 3]" "$SERVER" --spec="$SPEC" --listen=127.0.0.1:0 --min_clients=4
echo "PASS: full disk is an error naming the file (run, serve); serve --resume keeps rounds.jsonl; bad flags refused"
