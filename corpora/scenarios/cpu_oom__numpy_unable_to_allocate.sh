#!/bin/bash
# Reproduces: numpy cannot get host memory for a large array under an address-space
# limit: "numpy.core._exceptions._ArrayMemoryError: Unable to allocate ... for an array with shape".
ulimit -v 2000000
${PY:-python3} - <<'PY' 2>&1
import numpy as np
features = np.zeros((200000, 50000), dtype=np.float32)
PY
echo "exit code: $?"
