#!/bin/bash
# Reproduces: errno 12 (ENOMEM) "OSError: [Errno 12] Cannot allocate memory" when a
# process cannot map more memory (address space capped with ulimit -v).
ulimit -v 1500000
${PY:-python3} - <<'PY' 2>&1
import mmap
buf = mmap.mmap(-1, 4 * 1024**3)
PY
echo "exit code: $?"
