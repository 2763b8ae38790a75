# Shared by the CLI tests (sourced): counters and two checks. Needs $tmp (a scratch directory).
passed=0
failed=0

expect() {  # expect NAME EXIT_CODE COMMAND... : checks the exit code; output in $tmp/out, $tmp/err
  local name=$1 code=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local status=$?
  if [ "$status" -eq "$code" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: exit $status, expected $code"
    sed 's/^/    /' "$tmp/err"
  fi
}
same() {  # same NAME EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $1: expected '$2', got '$3'"
  fi
}
json_get() {  # json_get FILE EXPRESSION: prints EXPRESSION of the parsed JSON `d` (JSON text for
  # lists, objects and numbers; strings as they are)
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(v if isinstance(v, str) else json.dumps(v))' "$1" "$2"
}
processes_of() {  # processes_of TEXT : processes whose command line contains TEXT
  local p
  for p in /proc/[0-9]*; do
    tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "$1" && echo "${p#/proc/}"
  done
}
children_of() {  # children_of PID
  local stat pid comm state ppid rest
  for stat in /proc/[0-9]*/stat; do
    read -r pid comm state ppid rest 2>/dev/null <"$stat" || continue
    [ "$ppid" = "$1" ] && echo "$pid"
  done
}
first_child_done() {  # first_child_done PID: waits (up to 2 min) until a child that PID forked
  # has ended, i.e. one run finished; works whatever the load, unlike a fixed sleep
  local first="" i
  for i in $(seq 1200); do
    [ -n "$first" ] || first=$(children_of "$1" | head -1)
    [ -n "$first" ] && ! children_of "$1" | grep -qx "$first" && return 0
    sleep 0.1
  done
  return 1
}
same_bytes() {  # same_bytes NAME FILE1 FILE2: two files are byte-identical (provenance records
  # no option that leaves results unchanged: --out, --jobs, --shard)
  same "$1" "" "$(cmp "$2" "$3" 2>&1)"
}
