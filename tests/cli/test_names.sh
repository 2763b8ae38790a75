#!/usr/bin/env bash
# doctest_discover_tests registers each test case under its name, and CMake cuts a name at ';' (its
# list separator): ctest would then select no case and pass. Refuse such names.
# usage: test_names.sh DOCTEST_EXECUTABLE...
set -euo pipefail
status=0
for exe in "$@"; do
  bad=$("$exe" --list-test-cases | grep -v '^\[doctest\]' | grep ';' || true)
  if [ -n "$bad" ]; then
    echo "FAIL $(basename "$exe"): test case names with ';' (ctest would run none of them):"
    echo "$bad" | sed 's/^/  /'
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "PASS test names: none with ';'"
exit "$status"
