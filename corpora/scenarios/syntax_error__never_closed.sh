#!/bin/bash
# Reproduces: Python 3.10+ "SyntaxError: '(' was never closed" and unmatched bracket errors.
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
cat > "$d/train.py" <<'PYEOF'
import os
parser_args = dict(lr=0.1, epochs=10
print(parser_args)
PYEOF
cat > "$d/model.py" <<'PYEOF'
layers = [1, 2, 3)]
PYEOF
cd "$d"; $PY train.py; echo "exit code: $?"; $PY -c "import model"; echo "exit code: $?"
