#!/usr/bin/env bash
# Installs what is missing, builds prismsim and its tests (optimised, assertions on) and runs the
# whole suite through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset test >/dev/null
cmake --build --preset test
ctest --preset test -j "$(nproc)"
