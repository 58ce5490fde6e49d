#!/usr/bin/env bash
# Every committed figure (experiments/reports/**/*.svg) and every sample figure the unit tests draw
# (write_sample_figures) renders with rsvg-convert (librsvg2-bin, third_party/install_deps.sh)
# without an error or a warning. rsvg-convert must be present: CI installs it.
set -euo pipefail
if ! command -v rsvg-convert >/dev/null; then
  echo "FAIL: rsvg-convert is not installed (apt-get install librsvg2-bin; third_party/install_deps.sh lists it)"
  exit 1
fi
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
mkdir "$T/samples"
experiments/write_sample_figures "$T/samples"
committed=0
failed=0
render() {
  if ! rsvg-convert "$1" >"$T/out.png" 2>"$T/err" || [[ -s "$T/err" ]]; then
    echo "FAIL: $1 does not render:"
    cat "$T/err"
    failed=$((failed + 1))
  fi
}
while IFS= read -r -d '' svg; do
  render "$svg"
  committed=$((committed + 1))
done < <(find -L experiments/reports -name '*.svg' -print0)
samples=0
for svg in "$T"/samples/*.svg; do
  render "$svg"
  samples=$((samples + 1))
done
if ((committed == 0 || samples == 0)); then
  echo "FAIL: found $committed committed and $samples sample figures; expected some of each"
  exit 1
fi
if ((failed > 0)); then
  echo "FAIL: $failed of $((committed + samples)) figures do not render"
  exit 1
fi
echo "PASS: $committed committed and $samples sample figures render with $(rsvg-convert --version)"
