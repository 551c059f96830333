#!/bin/bash
# Reproduces: a job running as an unprivileged user (here: nobody, via setpriv) that
# cannot write its output / checkpoint directory, cannot read a data file, cannot
# run its launcher script or change ownership: PermissionError [Errno 13] / [Errno 1],
# shell "Permission denied" and "Operation not permitted".
PY=${PY:-python3}
D=/tmp/fc_perm_scenario; rm -rf $D; mkdir -p $D
mkdir -p $D/outputs $D/data && chmod 755 $D && chmod 755 $D/outputs
echo "1,2,3" > $D/data/train.csv && chmod 600 $D/data/train.csv
printf '#!/bin/bash\necho training\n' > $D/train.sh && chmod 644 $D/train.sh
RUN="setpriv --reuid=65534 --regid=65534 --clear-groups"
cd $D
$RUN $PY -c "
import os
os.makedirs('$D/outputs/run1/logs', exist_ok=True)
" 2>&1
$RUN $PY -c "
f = open('$D/data/train.csv')
" 2>&1
$RUN $PY -c "
import torch
torch.save({'w': torch.zeros(4)}, '$D/outputs/model_best.pt')
" 2>&1
$RUN $PY -c "
import os
os.chown('$D/data/train.csv', 65534, 65534)
" 2>&1
$RUN bash -c "$D/train.sh" 2>&1
$RUN bash -c "mkdir $D/outputs/run2" 2>&1
$RUN bash -c "chown nobody $D/data/train.csv" 2>&1
$RUN bash -c "echo step=1 >> $D/outputs/train.log" 2>&1
rm -rf $D
