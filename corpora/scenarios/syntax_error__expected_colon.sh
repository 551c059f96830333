#!/bin/bash
# Reproduces: Python 3.10+ specific SyntaxError wordings: "expected ':'", "invalid decimal literal",
# "cannot assign to function call", "Did you mean '=='?".
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
printf 'def train(lr)\n    return lr\n' > "$d/a.py"
printf 'x = 1epochs\n' > "$d/b.py"
printf 'f() = 3\n' > "$d/c.py"
printf 'if x = 3:\n    pass\n' > "$d/e.py"
cd "$d"; for f in a b c e; do $PY $f.py; echo "exit code: $?"; done
