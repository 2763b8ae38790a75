#!/usr/bin/env bash
# Installs what is missing, builds prismsim (Release) and runs the bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DPRISMSIM_BUILD_TESTS=OFF >/dev/null
cmake --build build/release --target prismsim
./build/release/simulator/prismsim run workloads/scenarios/llama3-70b-h100-variability.yaml --out out/demo
