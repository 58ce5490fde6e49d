#!/usr/bin/env bash
# One package per method: a method's code includes no other method's headers (shared mechanics live
# in fl or nn). Only a method's test may include another method's params (*.pb.h), to compose a
# plug-in with it ("fedprox+fedtad"). methods/testing and methods/reference exist to drive every
# method and are exempt, as are methods/*.cc (the fingerprint tests over all methods).
# Usage: check_method_includes.sh [ROOT] (the directory holding methods/; default: the repository).
set -uo pipefail
root="${1:-$(dirname "$0")/..}"
status=0
for dir in "$root"/methods/*/; do
  pkg="$(basename "$dir")"
  [[ "$pkg" == testing || "$pkg" == reference ]] && continue
  while IFS= read -r -d '' file; do
    while IFS= read -r line; do
      header="$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]+"([^"]+)".*/\1/' <<<"$line")"
      other="$(cut -d/ -f2 <<<"$header")"
      [[ "$other" == "$pkg" ]] && continue
      if [[ "$file" == *_test.cc && "$header" == *.pb.h ]]; then continue; fi
      echo "layering: ${file#"$root"/} includes $header (method $pkg includes method $other)"
      status=1
    done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]+"methods/' "$file")
  done < <(find "$dir" \( -name '*.h' -o -name '*.cc' \) -print0)
done
[[ $status -eq 0 ]] && echo "layering: ok (no method includes another method)"
exit $status
