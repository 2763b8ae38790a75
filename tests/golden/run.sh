#!/usr/bin/env bash
# Golden test of the bundled example: the terminal summary, summary.json and runs.csv must match
# the files here byte for byte. After an intended change of the model's prediction, refresh them
# with ./scripts/update-golden.sh and review the diff.
# usage: run.sh PRISMSIM check|update   (from the repository root)
set -eu
prismsim=$1
mode=$2
here=tests/golden
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$prismsim" run workloads/scenarios/dp-h100.yaml --out "$out" --jobs 2 >"$out/stdout"
sed -i "s|$out|OUT|g" "$out/stdout" "$out/summary.json"  # --out is part of the command line
status=0
for name in stdout summary.json runs.csv; do
  if [ "$mode" = update ]; then
    cp "$out/$name" "$here/dp-h100.$name"
  elif ! diff -u "$here/dp-h100.$name" "$out/$name"; then
    echo "FAIL: $name differs from $here/dp-h100.$name"
    status=1
  fi
done
[ "$mode" = update ] && echo "updated $here/dp-h100.*"
[ "$mode" = check ] && [ "$status" -eq 0 ] && echo "golden outputs match"
exit "$status"
