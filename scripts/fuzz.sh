#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (ASan + UBSan, build/fuzz) and runs each for
# SECONDS seconds, from seeds made of the repository's own files (fuzz/make_seeds.py).
#
# usage: scripts/fuzz.sh SECONDS [TARGET...]     (default: every target)
#
# Prints, per target, the inputs executed and the outcome; a crash, hang (an input running over
# 10 s), out-of-memory (over 2 GiB) or sanitizer report leaves its input under
# build/fuzz/artifacts/ (rerun one: build/fuzz/fuzz/TARGET FILE). Exits 1 when any target found
# something, 2 on usage errors. The corpora grow in build/fuzz/corpus/TARGET across runs.
# FUZZ_JOBS=N runs N targets at once (default 1). CXX picks the compiler (default clang++).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=(fuzz_scenario fuzz_platform fuzz_workload fuzz_set fuzz_kineto fuzz_samples_csv
         fuzz_nccl_log fuzz_timeline)

if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ]; then
  echo "usage: scripts/fuzz.sh SECONDS [TARGET...]" >&2
  exit 2
fi
seconds=$1
shift
if [ $# -gt 0 ]; then
  for target in "$@"; do
    if ! printf '%s\n' "${TARGETS[@]}" | grep -qx "$target"; then
      echo "fuzz.sh: unknown target '$target' (targets: ${TARGETS[*]})" >&2
      exit 2
    fi
  done
  TARGETS=("$@")
fi
jobs=${FUZZ_JOBS:-1}

./scripts/install-deps.sh clang libclang-rt-14-dev
build=build/fuzz
CXX=${CXX:-clang++} cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DPRISMSIM_BUILD_TESTS=OFF -DPRISMSIM_FUZZ=ON \
  >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" --target prismsim_fuzzers

seeds=$build/seeds
rm -rf "$seeds"
python3 fuzz/make_seeds.py . "$seeds" 2>/dev/null
mkdir -p "$build/artifacts" "$build/logs"

# fuzz_one TARGET: runs it, then prints one line of results.
fuzz_one() {
  local target=$1
  local corpus=$build/corpus/$target log=$build/logs/$target.log
  mkdir -p "$corpus"
  local dict=()
  case $target in
    fuzz_scenario | fuzz_platform | fuzz_workload | fuzz_set) dict=(-dict="$seeds/yaml.dict") ;;
  esac
  local status=0
  # -max_len: the largest seed (a generated trace) or 4 KiB; -rss_limit_mb: out-of-memory.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    "$build/fuzz/$target" "$corpus" "$seeds/$target" "${dict[@]}" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$target-" >"$log" 2>&1 || status=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  local outcome="ok"
  if [ "$status" -ne 0 ]; then
    local artifact
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    outcome="FOUND $(grep -m1 -oE 'ERROR: [A-Za-z]+: [a-z-]+|ERROR: libFuzzer: [a-z-]+|runtime error: .*|prismsim fuzz: .*|terminate called.*' "$log" || echo "exit $status")"
    outcome="$outcome; input: ${artifact:-none}; log: $log"
  fi
  printf '%-18s %10s execs in %ss  corpus %5s  %s\n' "$target" "${execs:-?}" "$seconds" \
    "$(ls "$corpus" | wc -l)" "$outcome"
  [ "$status" -eq 0 ]
}

failures=0
running=0
results=$build/results
rm -rf "$results"
mkdir -p "$results"
for target in "${TARGETS[@]}"; do
  (fuzz_one "$target" >"$results/$target" || touch "$results/$target.failed") &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
for target in "${TARGETS[@]}"; do
  cat "$results/$target"
  [ -e "$results/$target.failed" ] && failures=$((failures + 1))
done
if [ "$failures" -gt 0 ]; then
  echo "fuzz.sh: $failures target(s) found a crash, hang, out-of-memory or sanitizer report"
  exit 1
fi
echo "fuzz.sh: no crash, hang or out-of-memory in ${#TARGETS[@]} target(s), ${seconds}s each"
