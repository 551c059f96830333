#!/bin/bash
# Reproduces: a job script calling a program that is not installed / not on PATH:
# bash "command not found", dash "not found", env "No such file or directory".
set -u
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
printf '#!/bin/bash\necho "launching"\nhorovodrun_missing -np 4 python train.py\n' > "$d/run.sh"
printf 'echo launching\ntorchrun_missing --nproc_per_node=8 train.py\n' > "$d/run2.sh"
cd "$d"; bash run.sh; echo "exit code: $?"; sh run2.sh; echo "exit code: $?"
env PATH=/usr/bin:/bin nvcc_missing --version; echo "exit code: $?"
( PATH=/nonexistent; python3 train.py ); echo "exit code: $?"
