#!/usr/bin/env bash
# Every measured training configuration of the validation case tables (calibration/cases/,
# docs/validation.md) maps to a scenario that prismsim accepts: `scripts/validate-training.py
# --check` runs `prismsim check` on each distinct case command (the vTrain single-node rows share
# the multi-node rows' scenario and are left out for time).
# usage: validation_cases_test.sh PRISMSIM [DATA_DIR]
# Skips (exit 0) when python3 or the validation data (../shared/validation) is missing.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
prismsim=$1
data=${2:-}
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP validation_cases_test: python3 is not installed"
  exit 0
fi
if [ -z "$data" ]; then  # shared/validation in the nearest directory above the repository
  dir=$root
  while [ "$dir" != / ] && [ -z "$data" ]; do
    dir=$(dirname "$dir")
    [ -d "$dir/shared/validation" ] && data=$dir/shared/validation
  done
fi
if [ ! -d "$data/throughput-dense-llm" ]; then
  echo "SKIP validation_cases_test: no validation data at '$data'"
  exit 0
fi
python3 "$root/scripts/validate-training.py" --check --prismsim "$prismsim" --data "$data" \
  --suites vtrain-multi,megatron-ci,throughput --processes 2
