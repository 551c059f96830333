#!/bin/bash
# Reproduces: a Python process dereferencing a NULL pointer in native code
# (ctypes.string_at(0)); with faulthandler enabled (python -X faulthandler, as
# PYTHONFAULTHANDLER=1 would) Python prints "Fatal Python error: Segmentation fault"
# and the stack; bash then reports "Segmentation fault (core dumped)".
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"
ulimit -c unlimited
cat > train.py <<'PY'
import ctypes


def load_batch():
    return ctypes.string_at(0)


print("step 1", flush=True)
load_batch()
PY
/work/main/.venv/bin/python -X faulthandler train.py 2>&1
echo "exit code: $?"
echo "== without faulthandler"
/work/main/.venv/bin/python train.py 2>&1
echo "exit code: $?"
