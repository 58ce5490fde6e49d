#!/usr/bin/env bash
# check_method_includes.sh passes a tree whose methods keep to themselves and fails each mutation
# that makes one method include another.
set -uo pipefail
check="$1"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fresh() {
  rm -rf "$T/methods"
  mkdir -p "$T/methods/a" "$T/methods/b" "$T/methods/testing"
  printf '#include "methods/a/a.h"\n#include "fl/registry.h"\n' >"$T/methods/a/a.cc"
  printf '#include "methods/b/b.h"\n' >"$T/methods/b/b.cc"
  printf '#include "methods/b/b.h"\n#include "methods/a/a.pb.h"\n' >"$T/methods/b/b_test.cc"
  printf '#include "methods/a/a.h"\n#include "methods/b/b.h"\n' >"$T/methods/testing/trace.cc"
}
fresh
bash "$check" "$T" >/dev/null || { echo "FAIL: a clean tree was refused"; bash "$check" "$T"; exit 1; }
mutate() {  # FILE LINE: add LINE to FILE of a fresh tree; the check must fail naming FILE
  fresh
  echo "$2" >>"$T/methods/$1"
  out="$(bash "$check" "$T")" && { echo "FAIL: not refused: $1 with $2"; exit 1; }
  grep -q "methods/$1" <<<"$out" || { echo "FAIL: the refusal does not name methods/$1: $out"; exit 1; }
}
mutate b/b.cc '#include "methods/a/a.h"'
mutate b/b.cc '#include "methods/a/a.pb.h"'       # params protos only in tests
mutate b/b_test.cc '#include "methods/a/a.h"'     # a test may take a's params, not its code
mutate b/b.h '  #  include "methods/a/internal/x.h"'
echo "PASS"
