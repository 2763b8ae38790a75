#!/usr/bin/env bash
# Installs what is missing, builds prismsim (Release) and runs the bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target prismsim
./build/release/simulator/prismsim run workloads/scenarios/llama3-70b-h100-variability.yaml --out out/demo
