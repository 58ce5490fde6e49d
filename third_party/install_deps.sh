#!/usr/bin/env bash
# Installs every system package the fgl monorepo builds against (Debian 12).
# Idempotent and non-interactive; safe to run on CI and on fresh machines.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap
  build-essential
  libtorch-dev
  libopenblas0-pthread
  libabsl-dev
  libprotobuf-dev protobuf-compiler
  libgoogle-glog-dev libgflags-dev
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libigraph-dev
  libmetis-dev
  zlib1g-dev libzip-dev
  libssl-dev  # SHA-256 of dataset files on load (graph/io:dataset_checksums)
  nlohmann-json3-dev
  libgrpc++-dev protobuf-compiler-grpc
  openssl iproute2 jq  # the transport's TLS and network-namespace tests
  python3-torch python3-numpy  # reference ports of the authors' code (test oracles): same ATen 1.13 build as libtorch-dev
  librsvg2-bin  # rsvg-convert: every report figure must render (//experiments:svg_render_test)
  slurmctld slurmd slurm-client munge  # a one-node Slurm for //experiments/slurm:*_on_slurm_test (local_cluster.sh)
)

SUDO=""
if [[ "$(id -u)" != 0 ]]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install_deps: all ${#PACKAGES[@]} packages present"
fi

# LibTorch must use OpenBLAS, not the reference BLAS (about 40x slower matmuls).
if [[ -e /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 ]]; then
  $SUDO update-alternatives --set libblas.so.3-x86_64-linux-gnu \
    /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 >/dev/null
  $SUDO update-alternatives --set liblapack.so.3-x86_64-linux-gnu \
    /usr/lib/x86_64-linux-gnu/openblas-pthread/liblapack.so.3 >/dev/null || true
fi
