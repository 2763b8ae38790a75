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
status=$?
[ "$status" -eq 0 ] || exit "$status"
# --set goes after each case's own settings; a malformed one is refused with exit 2.
list=$(python3 "$root/scripts/validate-training.py" --list --data "$data" --suites megatron-ci \
  --set host.layer_syncs=0) || exit 1
cases=$(printf '%s\n' "$list" | grep -c .)
with_set=$(printf '%s\n' "$list" | grep -c -- '--set host.layer_syncs=0$')
if [ "$cases" -eq 0 ] || [ "$with_set" -ne "$cases" ]; then
  echo "FAIL: --set host.layer_syncs=0 ends $with_set of $cases case commands"
  exit 1
fi
python3 "$root/scripts/validate-training.py" --list --data "$data" --suites megatron-ci \
  --set layer_syncs >/dev/null 2>&1
status=$?
if [ "$status" -ne 2 ]; then
  echo "FAIL: --set without '=' exited $status, expected 2"
  exit 1
fi
# A fitted path cannot be set: the fit's values would replace it.
python3 "$root/scripts/validate-training.py" --list --data "$data" --suites megatron-ci \
  --fit --set host.layer_launch=1ms >/dev/null 2>&1
status=$?
if [ "$status" -ne 2 ]; then
  echo "FAIL: --fit --set host.layer_launch exited $status, expected 2"
  exit 1
fi
