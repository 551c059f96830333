#!/usr/bin/env python3
# Reproduces: the job's output directory is a FUSE mount (blobfuse, gcsfuse, s3fs...)
# whose daemon went away: every access fails with ENOTCONN "Transport endpoint is not
# connected". A FUSE mount is made in a private mount namespace and its /dev/fuse
# connection is closed without serving it, exactly what a crashed FUSE daemon leaves.
import ctypes, os, subprocess, sys
if os.environ.get("FC_IN_NS") != "1":
    r = subprocess.run(["unshare", "-m", sys.executable, __file__], env={**os.environ, "FC_IN_NS": "1"},
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
    sys.exit(0)
MNT = "/tmp/fc_fuse_outputs"
os.makedirs(MNT, exist_ok=True)
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/dev/fuse", os.O_RDWR)
if libc.mount(b"blobfuse", MNT.encode(), b"fuse", 0, f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()) != 0:
    sys.exit("mount failed")
os.close(fd)  # the FUSE daemon "dies"
PY = sys.executable
progs = [
    f"import os\nos.makedirs('{MNT}/run1/logs', exist_ok=True)\n",
    f"f = open('{MNT}/run1/metrics.json', 'w')\n",
    f"import torch\ntorch.save({{'w': torch.zeros(4)}}, '{MNT}/run1/model.pt')\n",
]
for p in progs:
    r = subprocess.run([PY, "-c", p], capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
for cmd in (["ls", MNT], ["mkdir", "-p", MNT + "/run1"], ["cp", "/etc/hostname", MNT + "/hostname"]):
    r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
libc.umount2(MNT.encode(), 2)
