#!/usr/bin/env bash
# Arrows point one way: experiments -> methods -> fl -> nn -> graph -> third_party. Fails when a
# lower package depends on (bazel query) or includes (#include) a higher one, or when a method
# includes another method (check_method_includes.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
layers=(graph nn fl methods experiments)
status=0
for ((i = 0; i < ${#layers[@]} - 1; ++i)); do
  lower=${layers[i]}
  higher=()
  for ((j = i + 1; j < ${#layers[@]}; ++j)); do higher+=("//${layers[j]}/..."); done
  upper_set=$(IFS=+; echo "${higher[*]}")
  found=$(bazel query --noshow_progress "deps(//$lower/...) intersect ($upper_set)" 2>/dev/null)
  if [[ $? -ne 0 ]]; then echo "layering: bazel query failed for //$lower"; status=1; fi
  if [[ -n "$found" ]]; then
    echo "layering: //$lower/... depends on:"; echo "$found" | head -20; status=1
  fi
  pattern=$(printf '#include "%s/\\|' "${layers[@]:i+1}")
  if grep -rn --include='*.h' --include='*.cc' "${pattern%\\|}" "$lower"; then
    echo "layering: $lower/ includes a header from a higher layer (above)"; status=1
  fi
done
# Beside the layers: one package per method, no method including another.
bash .ci/check_method_includes.sh || status=1
[[ $status -eq 0 ]] && echo "layering: ok (${layers[*]})"
exit $status
