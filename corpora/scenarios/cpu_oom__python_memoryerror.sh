#!/bin/bash
# Reproduces: a Python process whose address space is capped (ulimit -v, as a cluster
# memory limit would) allocates a large list and raises MemoryError.
ulimit -v 1000000
${PY:-python3} - <<'PY' 2>&1
data = []
for i in range(100):
    data.append(bytearray(200 * 1024 * 1024))
PY
echo "exit code: $?"
