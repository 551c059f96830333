#!/bin/bash
# Reproduces: relative-import failures when a package module is run as a script:
# "attempted relative import with no known parent package" and "attempted relative import beyond top-level package".
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d/pkg/sub"; trap 'rm -rf "$d"' EXIT
touch "$d/pkg/__init__.py" "$d/pkg/sub/__init__.py"
printf 'from .models import build_model\n' > "$d/pkg/train.py"
printf 'from ...utils import x\n' > "$d/pkg/sub/m.py"
cd "$d"; $PY pkg/train.py; echo "exit code: $?"; $PY -c "import pkg.sub.m"; echo "exit code: $?"
