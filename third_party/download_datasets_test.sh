#!/usr/bin/env bash
# Tests download_datasets.sh without network: URL listing and checksum verification.
set -euo pipefail
script="$TEST_SRCDIR/$TEST_WORKSPACE/third_party/download_datasets.sh"
tmp="$TEST_TMPDIR/data"; mkdir -p "$tmp/cora"

# URL listing: 8 Planetoid parts + 10 geom-gcn splits for cora, from the canonical repository.
# (Outputs are captured first: `grep -q` closing a pipe early would fail the pipeline under pipefail.)
urls=$("$script" --urls cora)
n=$(echo "$urls" | wc -l)
[[ $n -eq 18 ]] || { echo "expected 18 cora files, got $n"; exit 1; }
echo "$urls" | grep -q "^cora/ind.cora.allx https://github.com/kimiyoung/planetoid/raw/master/data/ind.cora.allx$"
if "$script" --urls nosuch 2>/dev/null; then echo "unknown dataset accepted"; exit 1; fi

# Checksums: a matching file passes, a changed file fails and is named.
printf 'abc' > "$tmp/cora/ind.cora.y"
sum=$(printf 'abc' | sha256sum | cut -d' ' -f1)
printf '%s  cora/ind.cora.y\n%s  cora/ind.cora.x\n' "$sum" "$sum" > "$TEST_TMPDIR/sums"
out=$("$script" --verify "$tmp" "$TEST_TMPDIR/sums")
[[ "$out" == "verify: 1 ok, 0 mismatched, 1 not present" ]] || { echo "got: $out"; exit 1; }
printf 'abd' > "$tmp/cora/ind.cora.y"
if err=$("$script" --verify "$tmp" "$TEST_TMPDIR/sums" 2>&1); then echo "mismatch accepted"; exit 1; fi
echo "$err" | grep -q "CHECKSUM MISMATCH: $tmp/cora/ind.cora.y"

# The shipped list covers every file of the shared data set (when CI has it) and matches.
if [[ -n "${FGL_DATA_DIR:-}" && -d "$FGL_DATA_DIR" ]]; then
  verified=$("$script" --verify "$FGL_DATA_DIR")
  echo "$verified" | grep -q " 0 mismatched" || { echo "shared data: $verified"; exit 1; }
fi
