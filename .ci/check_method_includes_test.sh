#!/usr/bin/env bash
# check_method_includes.sh passes a tree whose methods keep to themselves and unpack their params
# in the factory, and fails each mutation that makes one method include another or unpack a
# stored config in a member function.
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
  # Allowed: a method's trace binary for its differential test includes the shared tracer.
  printf '#include "methods/a/a.h"\n#include "methods/testing/trace.h"\n' >"$T/methods/a/a_trace_main.cc"
  # Allowed: the factory unpacks its argument; a test or methods/testing may unpack anything.
  printf '  FGL_ASSIGN_OR_RETURN(AParams params, fl::MethodParams<AParams>(config));\n' >>"$T/methods/a/a.cc"
  printf '  auto p = fl::MethodParams<a::AParams>(config_);\n' >>"$T/methods/b/b_test.cc"
  printf '  auto p = fl::MethodParams<a::AParams>(config_);\n' >>"$T/methods/testing/trace.cc"
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
mutate b/b.cc '#include "methods/testing/trace.h"'   # the tracer only in test-only sources
mutate a/a_trace_main.cc '#include "methods/b/b.h"'  # a trace binary still keeps to its method
mutate_at() {  # FILE LINE TEXT: append TEXT to FILE of a fresh tree; the check must fail naming FILE:LINE
  fresh
  printf '%s\n' "$3" >>"$T/methods/$1"
  out="$(bash "$check" "$T")" && { echo "FAIL: not refused: $1 with $3"; exit 1; }
  grep -q "methods/$1:$2 " <<<"$out" || { echo "FAIL: the refusal does not name methods/$1:$2: $out"; exit 1; }
}
# A stored config unpacked in a member function (e.g. every round in Train).
mutate_at a/a.cc 4 '    FGL_ASSIGN_OR_RETURN(const AParams p, fl::MethodParams<AParams>(config_));'
mutate_at a/a.cc 4 '    auto p = fl::MethodParams< a::AParams >( this->base_config_ );'
mutate_at b/b.h 1 '  FGL_ASSIGN_OR_RETURN(const BParams p, fl::MethodParams<BParams>(
      config_));'
echo "PASS"
