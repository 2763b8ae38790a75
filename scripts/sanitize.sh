#!/usr/bin/env bash
# Builds the whole suite with AddressSanitizer and UndefinedBehaviorSanitizer (CMake preset
# `asan`: -O1, any UBSan report fatal) and runs it through ctest. CXX picks the compiler
# (default clang++; g++ works too). Extra arguments go to ctest (e.g. -R unit).
#
# Sanitizer reports go to build/asan/sanitizer-logs/ rather than to stderr, which the CLI tests
# compare exactly: SimGrid switches actor stacks without telling ASan (the Debian library is
# not instrumented), and ASan then warns once per process that it "is ignoring requested
# __asan_handle_no_return". The script fails when ctest fails or when any log holds a report
# other than that warning.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh clang libclang-rt-14-dev
CXX=${CXX:-clang++} cmake --preset asan >/dev/null
cmake --build --preset asan
logs=$PWD/build/asan/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
# No fake stacks for use-after-return (stack switching); the engine lives until exit by design,
# so leaks of SimGrid's own objects are suppressed (tests/sanitizers/lsan.supp).
export ASAN_OPTIONS=detect_stack_use_after_return=0:strict_string_checks=1:log_path=$logs/asan:${ASAN_OPTIONS:-}
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan
status=0
ctest --preset asan -j "$(nproc)" "$@" || status=$?
reports=()
for log in "$logs"/*; do
  [ -e "$log" ] || continue
  if grep -v -e 'ASan is ignoring requested __asan_handle_no_return' \
       -e '^False positive error reports may follow' -e '^For details see' \
       -e 'google/sanitizers/issues/189' "$log" | grep -q .; then
    reports+=("$log")
  fi
done
for log in "${reports[@]}"; do
  echo "--- $log"
  cat "$log"
done
if [ "${#reports[@]}" -gt 0 ]; then
  echo "sanitize.sh: ${#reports[@]} sanitizer report(s) above"
  exit 1
fi
[ "$status" -eq 0 ] && echo "sanitize.sh: the suite passes under ASan and UBSan, no report"
exit "$status"
