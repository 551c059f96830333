#!/bin/bash
# Reproduces: "ImportError: cannot import name 'X' from 'pkg'" (API removed/renamed between
# versions) and the circular-import variant.
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
printf 'from torch.nn import FancyAttention\n' > "$d/train.py"
printf 'from b import g\ndef f(): pass\n' > "$d/a.py"
printf 'from a import f\ndef g(): pass\n' > "$d/b.py"
cd "$d"; $PY train.py; echo "exit code: $?"; $PY -c "import a"; echo "exit code: $?"
