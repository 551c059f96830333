#!/bin/bash
# Reproduces: the kernel returning EIO ("[Errno 5] Input/output error") to a reader or
# writer, as a failing disk, a broken NFS/Lustre mount or a dead FUSE backend does. Here
# the EIO comes from reading an unmapped address through /proc/self/mem, the one
# deterministic EIO source available without faulty hardware; the message lines are the
# ones Python and coreutils print for any EIO.
PY=${PY:-python3}
$PY - <<'PYEOF' 2>&1
import os
fd = os.open("/proc/self/mem", os.O_RDONLY)
os.lseek(fd, 0, os.SEEK_SET)   # address 0 is never mapped
print("writing outputs ...", flush=True)
data = os.read(fd, 4096)
PYEOF
dd if=/proc/self/mem of=/dev/null bs=4096 count=1 2>&1 | head -1
