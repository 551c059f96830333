#!/bin/bash
# Reproduces: the job's output/log volume fills up (a 1 MiB tmpfs in a private mount
# namespace): Python logging, plain writes and tee fail with ENOSPC
# "[Errno 28] No space left on device".
PY=${PY:-python3}
unshare -m bash -c '
D=/tmp/fc_out_full
mkdir -p $D && mount -t tmpfs -o size=1m tmpfs $D
'"$PY"' - <<PYEOF 2>&1
import numpy as np
print("epoch 3: writing predictions", flush=True)
with open("/tmp/fc_out_full/predictions.txt", "w") as f:
    for i in range(200000):
        f.write("%d 0.123456789\n" % i)
PYEOF
'"$PY"' - <<PYEOF 2>&1
import numpy as np
np.save("/tmp/fc_out_full/embeddings.npy", np.zeros((1024, 1024), dtype=np.float32))
PYEOF
yes "step 100 loss 0.1234" | head -c 3000000 | tee $D/train.log 2>&1 > /dev/null
umount $D'
