#!/usr/bin/env bash
# Integration tests of the gRPC transport: a server and clients as separate processes on
# 127.0.0.1 (or across network namespaces), compared with the in-process simulator.
#   transport_test.sh identical|kill|rejoin|refuse|tls|netns|takeover|silent
set -uo pipefail

CASE="${1:?case}"
SPEC="experiments/testdata/transport_csbm_fedavg.textproto"
SERVER="experiments/serve"
CLIENT="experiments/join"
SIM="experiments/run"
PROBE="fl/transport/transport_probe"
T="${TEST_TMPDIR:-$(mktemp -d)}/$CASE"
rm -rf "$T" && mkdir -p "$T"
# Servers without --tokens_file leave per-run tokens there for the clients (credentials.h); here,
# not in the user's own runtime directory.
export XDG_RUNTIME_DIR="$T/xdg_runtime"
CACHE="$T/cache"
PIDS=()

fail() { echo "FAIL ($CASE): $*"; for f in "$T"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap cleanup EXIT

# start_server NAME ARGS...: runs the server in the background, sets PORT.
start_server() {
  local name="$1"; shift
  "${NS_SERVER[@]}" "$SERVER" --spec="$SPEC" --listen=127.0.0.1:0 --port_file="$T/$name.port" --out="$T/$name" \
      --round_deadline_s=30 --join_timeout_s=60 "$@" >"$T/$name.out" 2>"$T/$name.log" &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  for _ in $(seq 1 100); do [[ -s "$T/$name.port" ]] && break; sleep 0.1; done
  [[ -s "$T/$name.port" ]] || fail "server $name did not start"
  PORT="$(cat "$T/$name.port")"
}

# start_client ID LOGNAME ARGS...
start_client() {
  local id="$1" name="$2"; shift 2
  "${NS_CLIENT[@]}" "$CLIENT" --spec="$SPEC" --server="${HOST:-127.0.0.1}:$PORT" --client_id="$id" \
      --cache_dir="$CACHE" --reconnect_s=20 "$@" >"$T/$name.log" 2>&1 &
  CLIENT_PID=$!
  PIDS+=("$CLIENT_PID")
}

wait_server() {
  wait "$SERVER_PID" || fail "server exited with $?"
}

simulate() {
  "$SIM" --spec="$SPEC" --out="$T/sim" --cache_dir="$CACHE" >"$T/sim.out" 2>"$T/sim.log" \
      || fail "simulator failed"
}

json_field() {  # json_field FILE KEY: a field of the RunResult JSON line (or of its transport stats)
  jq -r --arg k "$2" '.[$k] // .transport[$k] // empty' "$1" | head -1
}

round_field() {  # round_field ROUNDS.JSONL ROUND KEY
  jq -r --argjson r "$2" --arg k "$3" 'select(.round == $r) | .[$k]' "$1" | head -1
}

same_as_simulator() {  # same_as_simulator RUN: bit-identical final model, equal accuracy and bytes
  cmp -s "$T/sim/seed_2024/final_model.pb" "$T/$1/final_model.pb" || fail "final global model differs from the simulator's"
  for key in test_acc val_acc best_round bytes_up bytes_down; do
    a="$(json_field "$T/sim.out" "$key")"; b="$(json_field "$T/$1.out" "$key")"
    [[ -n "$a" && "$a" == "$b" ]] || fail "$key: simulator $a, transport $b"
  done
}

threads() { ls "/proc/$1/task" 2>/dev/null | wc -l; }

NS_SERVER=()
NS_CLIENT=()

case "$CASE" in
  identical)
    simulate
    start_server run
    for k in 0 1 2; do start_client "$k" "client$k"; done
    wait_server
    cmp -s "$T/sim/seed_2024/final_model.pb" "$T/run/final_model.pb" \
        || fail "final global model differs from the simulator's"
    for key in test_acc val_acc best_round bytes_up bytes_down; do
      a="$(json_field "$T/sim.out" "$key")"; b="$(json_field "$T/run.out" "$key")"
      [[ -n "$a" && "$a" == "$b" ]] || fail "$key: simulator $a, transport $b"
    done
    for key in payload_up payload_down; do
      t="$(json_field "$T/run.out" "$key")"
      s="$(json_field "$T/run.out" "bytes_${key#payload_}")"
      [[ "$t" == "$s" ]] || fail "transport counted $key=$t, the rounds $s"
    done
    echo "PASS: final model bit-identical; accuracy and bytes equal the simulator's"
    ;;

  methods)
    # Every method runs unchanged across processes: personalised broadcasts (GCFL+), a second
    # tensor set (SCAFFOLD), a preparation upload and server-side distillation (FedTAD), local
    # evaluation with masked models (FED-PUB), two exchanges per round (GraphFL), per-node data
    # exchanged by dataset id in the preparation (FedEgo's FedGCN).
    for m in gcfl_plus scaffold fedtad fedpub graphfl fedgcn_yao; do
      spec="$T/$m.textproto"
      sed -e "s/^method: .*/method: \"$m\"/" -e 's/^rounds: .*/rounds: 3/' "$SPEC" >"$spec"
      if [[ $m == fedpub ]]; then
        sed -i -e 's/^model: .*/model: "gcn:layers=3,hidden=16,dropout=0.5,jk=last,masked=true"/' "$spec"
        echo 'eval { model: LOCAL }' >>"$spec"
      fi
      SPEC="$spec"
      "$SIM" --spec="$SPEC" --out="$T/sim_$m" --cache_dir="$CACHE" >"$T/sim_$m.out" 2>"$T/sim_$m.log" \
          || fail "simulator failed for $m"
      start_server "run_$m"
      start_client 0 "client_$m" --client_ids=0-2
      wait_server
      for key in test_acc val_acc bytes_up bytes_down; do
        a="$(json_field "$T/sim_$m.out" "$key")"; b="$(json_field "$T/run_$m.out" "$key")"
        [[ -n "$a" && "$a" == "$b" ]] || fail "$m $key: simulator $a, transport $b"
      done
      if [[ -f "$T/sim_$m/seed_2024/final_model.pb" ]]; then
        cmp -s "$T/sim_$m/seed_2024/final_model.pb" "$T/run_$m/final_model.pb" || fail "$m: final model differs"
      fi
      echo "$m: test accuracy $(json_field "$T/run_$m.out" test_acc), as in the simulator"
    done
    echo "PASS: GCFL+, SCAFFOLD, FedTAD, FED-PUB, GraphFL and FedGCN give the simulator's numbers across processes"
    ;;
  nfedgnn)
    # One user per client: users 0-38 in one process, user 39 alone in another. Round r + 1 of
    # the per-user run scores split round r (per_user.h), so 9 rounds there are 8 batched.
    SPEC="experiments/testdata/transport_csbm_nfedgnn.textproto"
    "$SIM" --spec="$SPEC" --set="rounds=8" --out="$T/sim" --cache_dir="$CACHE" >"$T/sim.out" 2>"$T/sim.log" \
        || fail "batched run failed"
    start_server run
    start_client 0 "users" --client_ids=0-38
    start_client 39 "user39"
    wait_server
    for r in $(seq 1 8); do
      for key in test_acc val_acc; do
        a="$(round_field "$T/sim/seed_2024/rounds.jsonl" "$r" "$key")"
        b="$(round_field "$T/run/rounds.jsonl" "$((r + 1))" "$key")"
        [[ -n "$a" && "$a" == "$b" ]] || fail "split round $r $key: batched $a, per user $b"
      done
    done
    up="$(round_field "$T/run/rounds.jsonl" 2 bytes_up)"
    [[ -n "$up" && "$up" -gt 0 ]] || fail "no upload bytes counted"
    echo "PASS: 40 users as clients across 2 processes compute the batched run's accuracies (round 2 uploads: $up B)"
    ;;

  kill)
    start_server run --set="rounds=8"
    start_client 0 client0 --set="rounds=8"
    start_client 1 client1 --set="rounds=8"
    start_client 2 client2 --set="rounds=8" --testonly_kill_after_round=2
    victim=$CLIENT_PID
    wait_server
    wait "$victim"; status=$?
    [[ $status -eq 137 ]] || fail "client 2 exited with $status, not by SIGKILL"
    grep -q "client 2 disconnected\|client 2 .*left out\|client 2 missed" "$T/run.log" || fail "drop not logged"
    grep -q "round 8: 2 participants" "$T/run.log" || fail "round 8 should have 2 participants"
    first="$(round_field "$T/run/rounds.jsonl" 1 test_acc)"
    last="$(round_field "$T/run/rounds.jsonl" 8 test_acc)"
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b > a) }' || fail "accuracy did not improve: $first -> $last"
    grep -h "client 2" "$T/run.log"
    echo "PASS: client 2 killed after round 2; run finished; test accuracy $first -> $last"
    ;;

  rejoin)
    start_server run --set="rounds=8" --min_clients_per_round=3
    start_client 0 client0 --set="rounds=8"
    start_client 1 client1 --set="rounds=8"
    start_client 2 client2 --set="rounds=8" --testonly_kill_after_round=2
    wait "$CLIENT_PID"
    start_client 2 client2b --set="rounds=8"
    wait_server
    grep -q "client 2 rejoined" "$T/run.log" || fail "rejoin not logged"
    grep -q "round 8: 3 participants" "$T/run.log" || fail "client 2 did not take part after rejoining"
    echo "PASS: client 2 killed after round 2 rejoined and trained in later rounds"
    ;;

  refuse)
    printf '0 tok-zero\n1 tok-one\n2 tok-two\n' >"$T/tokens"
    start_server run --tokens_file="$T/tokens"
    # The impostor goes first: the server (waiting for all three) must refuse it, and a run this
    # small would be over before a late impostor could even connect.
    start_client 0 impostor --token=wrong
    impostor=$CLIENT_PID
    wait "$impostor" && fail "a client with a wrong token was not refused"
    grep -q "wrong token" "$T/impostor.log" || fail "impostor's error does not say why"
    start_client 0 client0 --token=tok-zero
    start_client 1 client1 --token=tok-one --testonly_bad_shape_round=2
    start_client 2 client2 --token=tok-two
    wait_server
    grep -q "round 2: client 1 left out" "$T/run.log" || fail "malformed reply not rejected"
    grep "round 2: client 1 left out" "$T/run.log" | grep -qi "shape" || fail "rejection does not name the shape"
    grep -q "round 2: 2 participants" "$T/run.log" || fail "round 2 should have 2 participants"
    grep -q "round 3: 3 participants" "$T/run.log" || fail "client 1 should be back in round 3"
    [[ "$(json_field "$T/run.out" refused_joins)" -ge 1 ]] || fail "refused join not counted"
    echo "PASS: wrong token refused, wrong shape rejected, run finished"
    ;;

  resume)
    simulate
    mkdir -p "$T/ckpt"
    start_server run --checkpoint_dir="$T/ckpt" --testonly_kill_after_checkpoint=3
    first_pid=$SERVER_PID
    for k in 0 1 2; do start_client "$k" "client$k"; done
    wait "$first_pid"; status=$?
    [[ $status -eq 137 ]] || fail "server exited with $status, not by SIGKILL"
    rm -f "$T/run2.port"
    start_server run2 --listen="127.0.0.1:$PORT" --checkpoint_dir="$T/ckpt" --resume
    wait_server
    grep -q "resumed from .* after round 3" "$T/run2.log" || fail "server did not resume after round 3"
    cmp -s "$T/sim/seed_2024/final_model.pb" "$T/run2/final_model.pb" \
        || fail "resumed run differs from the simulator"
    echo "PASS: server killed after round 3, restarted from its checkpoint; clients rejoined; bit-identical"
    ;;

  tls)
    command -v openssl >/dev/null || { echo "SKIP: openssl not installed"; exit 0; }
    cd "$T" || exit 1
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=fgl-test-ca" \
        -keyout ca.key -out ca.pem >/dev/null 2>&1 || fail "openssl CA"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr \
        >/dev/null 2>&1
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile san.ext -out server.pem >/dev/null 2>&1 || fail "openssl server cert"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=fgl-client" -keyout client.key -out client.csr \
        >/dev/null 2>&1
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -out client.pem >/dev/null 2>&1 || fail "openssl client cert"
    cd - >/dev/null || exit 1
    simulate
    start_server run --tls_cert="$T/server.pem" --tls_key="$T/server.key" --tls_ca="$T/ca.pem"
    start_client 0 nocert --tls_ca="$T/ca.pem" --reconnect_s=2
    nocert=$CLIENT_PID
    for k in 0 1 2; do
      start_client "$k" "client$k" --tls_ca="$T/ca.pem" --tls_cert="$T/client.pem" --tls_key="$T/client.key"
    done
    wait "$nocert" && fail "a client without a certificate was let in"
    wait_server
    cmp -s "$T/sim/seed_2024/final_model.pb" "$T/run/final_model.pb" || fail "TLS run differs from the simulator"
    echo "PASS: mutual TLS run bit-identical to the simulator; client without certificate refused"
    ;;

  netns)
    ns="fgl$$"
    if ! ip netns add "${ns}s" 2>/dev/null; then
      echo "SKIP: cannot create network namespaces here (needs root and CAP_SYS_ADMIN)"
      exit 0
    fi
    trap 'cleanup; ip netns del "${ns}s" 2>/dev/null; ip netns del "${ns}c" 2>/dev/null' EXIT
    ip netns add "${ns}c" || fail "second namespace"
    ip link add "${ns}a" type veth peer name "${ns}b" || { echo "SKIP: cannot create veth pairs"; exit 0; }
    ip link set "${ns}a" netns "${ns}s" && ip link set "${ns}b" netns "${ns}c" || fail "move veth"
    ip -n "${ns}s" addr add 10.213.7.1/24 dev "${ns}a" && ip -n "${ns}s" link set "${ns}a" up
    ip -n "${ns}c" addr add 10.213.7.2/24 dev "${ns}b" && ip -n "${ns}c" link set "${ns}b" up
    ip -n "${ns}s" link set lo up && ip -n "${ns}c" link set lo up
    simulate
    NS_SERVER=(ip netns exec "${ns}s")
    NS_CLIENT=(ip netns exec "${ns}c")
    HOST=10.213.7.1
    printf '0 tok-zero\n1 tok-one\n2 tok-two\n' >"$T/tokens"  # off loopback, tokens are required
    start_server run --listen=10.213.7.1:0 --allow_insecure_remote --tokens_file="$T/tokens"
    for k in 0 1 2; do start_client "$k" "client$k" --allow_insecure_remote --tokens_file="$T/tokens"; done
    wait_server
    cmp -s "$T/sim/seed_2024/final_model.pb" "$T/run/final_model.pb" || fail "netns run differs from the simulator"
    echo "PASS: server and clients in separate network namespaces (10.213.7.1 <- 10.213.7.2), bit-identical"
    ;;

  takeover)
    # Issue #68: on a server started without --tokens_file (the README's loopback setup) a local
    # process sent Joins with made-up shard shapes, learnt the spec from the refusal, and the first
    # joiner's shape then locked every real client out. Now the server makes per-run tokens (0600,
    # read by join), tells an unauthenticated caller nothing of the spec, and checks each claimed
    # shape against the dataset's (csbm: known to the server), refusing a mismatched client alone.
    simulate
    start_server run
    tokens="$(grep -o 'per-run client tokens in [^ ]*' "$T/run.log" | head -1 | cut -d' ' -f5)"
    [[ -n "$tokens" && -f "$tokens" ]] || fail "the server wrote no per-run tokens file"
    [[ "$(stat -c %a "$tokens")" == 600 ]] || fail "$tokens has mode $(stat -c %a "$tokens"), not 600"
    "$PROBE" --mode=join --server="127.0.0.1:$PORT" --client_ids=0,1,2 --features=7 --classes=3 \
        >"$T/attacker.log" 2>&1 || fail "probe failed"
    grep -q ": OK" "$T/attacker.log" && fail "a join without a token was accepted"
    [[ "$(grep -c "^join client .: 16: " "$T/attacker.log")" -eq 3 ]] || fail "joins without a token not refused as unauthenticated"
    grep -q "csbm\|louvain\|fedavg" "$T/attacker.log" && fail "a refusal to an unauthenticated caller gave the spec away"
    # Even a process that can read the tokens (the same user) cannot impose its shape: refused.
    "$PROBE" --mode=join --server="127.0.0.1:$PORT" --client_ids=0,1,2 --features=7 --classes=3 \
        --tokens_file="$tokens" >"$T/insider.log" 2>&1 || fail "probe failed"
    grep -q ": OK" "$T/insider.log" && fail "a join with a made-up shard shape was accepted"
    [[ "$(grep -c "inconsistent shard" "$T/insider.log")" -eq 3 ]] || fail "made-up shapes not refused"
    for k in 0 1 2; do start_client "$k" "client$k"; done  # no token flags: the per-run file
    wait_server
    same_as_simulator run
    [[ "$(json_field "$T/run.out" refused_joins)" -ge 6 ]] || fail "refused joins not counted"
    [[ -e "$tokens" ]] && fail "per-run tokens left behind after the run"
    cat "$T/attacker.log"
    echo "PASS: takeover refused (no token: UNAUTHENTICATED without the spec; made-up shape: refused alone); run bit-identical"
    ;;

  silent)
    # Issue #68: the session handler waited for a stream's first message with no deadline, before
    # any token was checked, one server thread each: 200 silent streams took 10 -> 210 threads.
    # Now at most --max_unauthenticated_streams wait, each at most --first_message_timeout_s; the
    # real clients join during the flood (up to three batches of 2 s, as long as the server runs:
    # longer than a client takes to load its shard; the stream of a connection that joined with a
    # token passes the cap) and the run is unchanged.
    simulate
    cap=16
    start_server run --first_message_timeout_s=2 --max_unauthenticated_streams=$cap
    sleep 0.5
    before="$(threads "$SERVER_PID")"
    "$PROBE" --mode=silent --server="127.0.0.1:$PORT" --streams=200 --repeat=3 --opened_file="$T/opened" \
        --wait_s=10 >"$T/probe.log" 2>&1 &
    probe=$!
    PIDS+=("$probe")
    for _ in $(seq 1 100); do [[ -e "$T/opened" ]] && break; sleep 0.1; done
    [[ -e "$T/opened" ]] || fail "probe did not open its streams"
    for k in 0 1 2; do start_client "$k" "client$k"; done
    most="$before"
    while kill -0 "$probe" 2>/dev/null; do
      n="$(threads "$SERVER_PID")"; (( n > most )) && most=$n
      sleep 0.05
    done
    wait "$probe" || fail "probe failed"
    cat "$T/probe.log"
    grep -q "600 opened, .* 0 still open" "$T/probe.log" || fail "the server left silent streams open"
    refused="$(sed -n 's/.* opened, \([0-9]*\) refused.*/\1/p' "$T/probe.log")"
    # The server ends with its run, which may be before the last batch.
    (( refused >= 200 - cap )) || fail "only $refused of 600 silent streams refused at once (cap $cap)"
    # The silent ones' threads, the clients' sessions and gRPC's pollers; never one per stream.
    (( most <= before + cap + 3 + 8 )) || fail "server threads grew from $before to $most"
    wait_server
    same_as_simulator run
    echo "PASS: 3 x 200 silent streams: server threads $before -> at most $most (cap $cap); run bit-identical"
    ;;

  *) echo "unknown case $CASE"; exit 2 ;;
esac
