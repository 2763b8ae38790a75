#!/usr/bin/env bash
# Rewrites the golden outputs of the bundled example after an intended change of the model's
# prediction. Review `git diff tests/golden` before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset test >/dev/null
cmake --build --preset test --target prismsim
tests/golden/run.sh build/test/simulator/prismsim update
