#!/bin/bash
# Reproduces: a Python process that receives SIGABRT (os.abort() stands in for an abort in
# a native extension); with faulthandler Python prints "Fatal Python error: Aborted" and
# `python` is the project virtualenv's (first on PATH under corpora/run_scenarios.py): bash echoes the command.
# the stack. Run once with core dumps enabled and once with them disabled (ulimit -c 0),
# so bash prints "Aborted (core dumped)" and plain "Aborted".
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > train.py <<'PY'
import os


def step():
    os.abort()


print("epoch 0 step 100", flush=True)
step()
PY
(ulimit -c unlimited; python -X faulthandler train.py 2>&1; echo "exit code: $?")
echo "== core dumps disabled"
(ulimit -c 0; python train.py 2>&1; echo "exit code: $?")
