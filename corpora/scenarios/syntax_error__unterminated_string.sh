#!/bin/bash
# Reproduces: Python "SyntaxError: unterminated string literal" and "unterminated triple-quoted string literal".
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
printf 'data_dir = "/data/imagenet\nprint(data_dir)\n' > "$d/train.py"
printf 'def f():\n    """docstring\n    return 1\n' > "$d/utils.py"
cd "$d"; $PY train.py; echo "exit code: $?"; $PY utils.py; echo "exit code: $?"
