#!/bin/bash
# Reproduces: ModuleNotFoundError / "No module named" for a missing third-party package and a
# missing submodule, in a training script (Python 3.11).
set -u
PY=${PY:-python3}
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
printf 'import torch\nimport horovod_not_installed.torch as hvd\n' > "$d/train.py"
printf 'import torch\nfrom torch.utils.tensorboardx import SummaryWriter\n' > "$d/train2.py"
cd "$d"; $PY train.py; echo "exit code: $?"; $PY train2.py; echo "exit code: $?"
$PY -m not_a_real_module_xyz; echo "exit code: $?"
$PY -m not_a_pkg_xyz.launch --nproc 8; echo "exit code: $?"
# older interpreters' wordings (pyenv 2.7 and 3.6)
for v in 2.7.18 3.6.15; do
  P=/root/.pyenv/versions/$v/bin/python; [ -x "$P" ] || continue
  echo "### python $v"
  $P train.py; echo "exit code: $?"
  $P -c "from os import not_a_name"; echo "exit code: $?"
done
