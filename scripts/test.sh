#!/usr/bin/env bash
# Installs what is missing, builds prismsim and its tests (optimised, assertions on) and runs the
# whole suite through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O2 \
  -DPRISMSIM_BUILD_TESTS=ON >/dev/null
cmake --build build/test
ctest --test-dir build/test --output-on-failure -j "$(nproc)"
