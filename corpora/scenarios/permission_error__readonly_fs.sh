#!/bin/bash
# Reproduces: a job writing into a directory mounted read-only (e.g. a dataset or code
# volume mounted ro into the container): "[Errno 30] Read-only file system".
PY=${PY:-python3}
D=/tmp/fc_ro_scenario; rm -rf $D; mkdir -p $D
unshare -m bash -c "
mount --bind -o ro $D $D
$PY -c \"
import os
os.makedirs('$D/outputs', exist_ok=True)
\" 2>&1
$PY -c \"
import torch
torch.save({'w': torch.zeros(4)}, '$D/model.pt')
\" 2>&1
$PY -c \"
import logging
logging.basicConfig(filename='$D/train.log')
\" 2>&1
touch $D/train.log 2>&1
mkdir $D/cache 2>&1
"
rm -rf $D
