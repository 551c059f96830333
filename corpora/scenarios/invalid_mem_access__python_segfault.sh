#!/bin/bash
# Reproduces: a Python process dereferencing a NULL pointer in native code
# (ctypes.string_at(0)); with faulthandler enabled (python -X faulthandler, as
# `python` is the project virtualenv's (first on PATH under corpora/run_scenarios.py): bash echoes the command.
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
python -X faulthandler train.py 2>&1
echo "exit code: $?"
echo "== without faulthandler"
python train.py 2>&1
echo "exit code: $?"
