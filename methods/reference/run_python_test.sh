#!/usr/bin/env bash
# Runs a reference-port test with Debian's python3 (python3-torch: the same ATen 1.13 build as our
# LibTorch), whatever python3 comes first on PATH: run_python_test.sh SCRIPT [ARGS...]
set -euo pipefail
PY=/usr/bin/python3
if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "FAIL: $PY cannot import torch; third_party/install_deps.sh installs python3-torch" >&2
  exit 1
fi
exec "$PY" "$@"
