#!/usr/bin/env bash
# One package per method: a method's code includes no other method's headers (shared mechanics live
# in fl or nn). Only a method's test may include another method's params (*.pb.h), to compose a
# plug-in with it ("fedprox+fedtad"). methods/testing and methods/reference exist to drive every
# method and are exempt, as are methods/*.cc (the fingerprint tests over all methods); a method's
# test-only sources (*_test.cc, *_trace_main.cc: a trace binary for its differential test) may
# include the shared tracer, methods/testing/.
# Also: a method's typed params are unpacked once, in its factory, and kept as a member
# (methods/fedgkc/fedgkc.cc); a non-test method source that unpacks a stored config,
# MethodParams<P>(config_) (any member: a name ending in "_"), would redo it every round and keep
# an error path that can no longer fire. Each is refused naming file:line.
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
      if [[ ( "$file" == *_test.cc || "$file" == *_trace_main.cc ) && "$other" == testing ]]; then continue; fi
      echo "layering: ${file#"$root"/} includes $header (method $pkg includes method $other)"
      status=1
    done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]+"methods/' "$file")
  done < <(find "$dir" \( -name '*.h' -o -name '*.cc' \) -print0)
done
[[ $status -eq 0 ]] && echo "layering: ok (no method includes another method)"
params_status=0
for dir in "$root"/methods/*/; do
  pkg="$(basename "$dir")"
  [[ "$pkg" == testing || "$pkg" == reference ]] && continue
  while IFS= read -r -d '' file; do
    [[ "$file" == *_test.cc ]] && continue
    # The whole file at once, so that a call broken across lines is seen too; the line is the
    # call's first.
    hits="$(perl -0777 -ne 'while (/MethodParams\s*<[^;()]*?>\s*\(\s*(?:this\s*->\s*)?([A-Za-z_]\w*_)\s*\)/g) {
                               print 1 + (substr($_, 0, $-[0]) =~ tr/\n//), " $1\n" }' "$file")"
    while read -r line member; do
      [[ -n "$line" ]] || continue
      echo "params: ${file#"$root"/}:$line unpacks the stored $member (MethodParams<...>($member)) in a" \
           "member function; unpack once in the factory and keep the params as a member"
      params_status=1
    done <<<"$hits"
  done < <(find "$dir" \( -name '*.h' -o -name '*.cc' \) -print0)
done
[[ $params_status -eq 0 ]] && echo "params: ok (no method unpacks a stored config)"
[[ $params_status -eq 0 ]] || status=1
exit $status
