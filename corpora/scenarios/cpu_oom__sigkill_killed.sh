#!/bin/bash
# Reproduces: a training process killed with SIGKILL (what the Linux OOM killer sends);
# a non-interactive bash reports the death of its child as "Killed" and exit code 137.
# `python` is the project virtualenv's (first on PATH under corpora/run_scenarios.py): bash echoes the command.
python -c '
import os, signal, time
print("epoch 1 step 10 loss 2.31", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
time.sleep(5)'
echo "exit code: $?"
