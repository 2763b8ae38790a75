#!/usr/bin/env bash
# Speed and memory of `prismsim calibrate` on PyTorch profiler (Kineto) traces. Prints figures;
# checks nothing.
#   16 synthetic rank traces (scripts/make-kineto-trace.py) with EVENTS GPU kernel events in all
#   (default 1,000,000), each kernel with its CPU operator, launch and flow events as PyTorch
#   writes them (CPU_EVENTS=none: kernels only); the whole command: read, match collectives, fit
#   targets: at most 60 s wall and 2 GiB peak resident memory for 10^6 kernel events
# Builds nothing: uses $PRISMSIM (default build/release/simulator/prismsim).
# usage: [PRISMSIM=...] [EVENTS=N] [CPU_EVENTS=full|none] scripts/bench-calibrate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
prismsim=${PRISMSIM:-build/release/simulator/prismsim}
events=${EVENTS:-1000000}
if [ ! -x "$prismsim" ]; then
  echo "bench-calibrate: no $prismsim: build it first (cmake --preset release && cmake --build --preset release)" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== traces: 16 ranks, $events kernel events, CPU events ${CPU_EVENTS:-full}"
start=$(date +%s.%N)
python3 scripts/make-kineto-trace.py "$tmp/traces" --ranks 16 --events "$events" \
  --cpu-events "${CPU_EVENTS:-full}" 2>/dev/null
bytes=$(du -sb "$tmp/traces" | cut -f1)
echo "written in $(echo "$(date +%s.%N) $start" | awk '{printf "%.1f", $1 - $2}') s:" \
  "$(du -sh "$tmp/traces" | cut -f1), $bytes bytes" \
  "($(echo "$bytes $events" | awk '{printf "%.0f", $1 / $2}') bytes a kernel event)"

echo "== prismsim calibrate (whole command)"
status=0
/usr/bin/time -v -o "$tmp/time" "$prismsim" calibrate "$tmp"/traces/*.json --out "$tmp/fit.yaml" \
  >"$tmp/report" 2>"$tmp/stderr" || status=$?
if [ "$status" -ne 0 ]; then
  echo "calibrate failed (exit status $status):"
  cat "$tmp/stderr"
  tail -5 "$tmp/report"
  exit 1
fi
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time" |
  awk -F: '{s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s}')
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time")
echo "$wall s wall (target 60 s): $(awk -v w="$wall" 'BEGIN {print w <= 60 ? "met" : "NOT met"}')"
echo "$(awk -v k="$rss" 'BEGIN {printf "%.0f", k / 1024}') MiB peak resident (target 2048 MiB):" \
  "$(awk -v k="$rss" 'BEGIN {print k <= 2 * 1024 * 1024 ? "met" : "NOT met"}')"
echo "$(sed -n 's/.*User time (seconds): //p' "$tmp/time") s user," \
  "$(sed -n 's/.*System time (seconds): //p' "$tmp/time") s system," \
  "$(awk -v b="$bytes" -v w="$wall" 'BEGIN {printf "%.0f", b / 1048576 / w}') MiB/s of trace"
if [ -s "$tmp/stderr" ]; then
  echo "-- stderr:"
  head -20 "$tmp/stderr"
fi
echo "-- report (the first input's line, then the section entries):"
grep -m1 'kineto trace' "$tmp/report"
sed -n '/^collective calls/,/^spatial/p' "$tmp/report"
echo "-- fitted section (first 30 lines):"
grep -v '^#' "$tmp/fit.yaml" | head -30
