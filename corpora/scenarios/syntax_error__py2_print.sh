#!/bin/bash
# Reproduces: running Python 2 code under Python 3: "Missing parentheses in call to 'print'"
# and the Python 2 "except X, e" syntax.
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
printf 'import sys\nprint "epoch %%d" %% 1\n' > "$d/train.py"
printf 'try:\n    pass\nexcept Exception, e:\n    pass\n' > "$d/old.py"
cd "$d"; $PY train.py; echo "exit code: $?"; $PY old.py; echo "exit code: $?"
