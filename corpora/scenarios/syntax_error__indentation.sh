#!/bin/bash
# Reproduces: Python IndentationError (unexpected indent, expected an indented block,
# unindent does not match) and TabError (inconsistent use of tabs and spaces).
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
printf 'import os\n  print(os.getcwd())\n' > "$d/a.py"
printf 'def train():\nreturn 1\n' > "$d/b.py"
printf 'def train():\n        x = 1\n    return x\n' > "$d/c.py"
printf 'def train():\n    x = 1\n\treturn x\n' > "$d/d.py"
cd "$d"; for f in a b c d; do $PY $f.py; echo "exit code: $?"; done
