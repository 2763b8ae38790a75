#!/usr/bin/env bash
# Checks that every C++ file of the repository matches .clang-format (clang-format 14, the
# version Debian 12 has). Prints the files that do not and exits 1 if there are any.
# usage: scripts/check-format.sh [--fix]   (--fix rewrites them in place)
set -euo pipefail
cd "$(dirname "$0")/.."
format=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$format" ]; then
  echo "check-format.sh: clang-format is not installed (Debian: apt-get install clang-format-14)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cc')
if [ "${1:-}" = "--fix" ]; then
  "$format" -i --style=file "${files[@]}"
  exit 0
fi
bad=0
for file in "${files[@]}"; do
  if ! "$format" --dry-run -Werror --style=file "$file" >/dev/null 2>&1; then
    echo "not formatted: $file"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "check-format.sh: $bad of ${#files[@]} files do not match .clang-format (scripts/check-format.sh --fix)"
  exit 1
fi
echo "check-format.sh: all ${#files[@]} files match .clang-format"
