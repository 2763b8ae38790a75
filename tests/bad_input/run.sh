#!/usr/bin/env bash
# Runs `prismsim check` on every *.yaml here. Each file states what must happen, in comments:
#   # args: extra arguments (optional)
#   # expect: one exact line of stderr (one comment per line, in order, at the end of the file
#             so that they do not shift the positions being checked)
# Every case must exit with code 2 and print exactly the expected lines.
set -u
prismsim=$1
failures=0
cases=0
for file in *.yaml; do
  cases=$((cases + 1))
  expected=$(sed -n 's/^# expect: //p' "$file")
  args=$(sed -n 's/^# args: //p' "$file")
  if [ -z "$expected" ]; then
    echo "FAIL $file: no '# expect:' line"; failures=$((failures + 1)); continue
  fi
  # shellcheck disable=SC2086
  actual=$("$prismsim" check "$file" $args 2>&1 >/dev/null)
  status=$?
  if [ "$status" -ne 2 ] || [ "$actual" != "$expected" ]; then
    failures=$((failures + 1))
    echo "FAIL $file (exit $status)"
    diff <(echo "$expected") <(echo "$actual") | sed 's/^/    /'
  fi
done
echo "$((cases - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
