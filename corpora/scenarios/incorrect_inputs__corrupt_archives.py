#!/usr/bin/env python3
# Reproduces: compressed / archived data files that are corrupt or truncated (a broken
# download): gzip, zip (also .npz), tar and .npy readers raising their errors.
import subprocess, sys, os, tempfile, gzip, io
import numpy as np
PY = sys.executable
d = "/tmp/fc_corrupt_archives"; os.makedirs(d, exist_ok=True)
gz = gzip.compress(b"x" * 100000 + os.urandom(100000))
open(os.path.join(d, "trunc.gz"), "wb").write(gz[: len(gz) // 2])
open(os.path.join(d, "notgz.gz"), "wb").write(b"<html>Access denied</html>")
open(os.path.join(d, "bad.zip"), "wb").write(b"<html>Access denied</html>")
open(os.path.join(d, "bad.tar"), "wb").write(b"<html>Access denied</html>" * 10)
buf = io.BytesIO(); np.save(buf, np.zeros((1000, 100), dtype=np.float32)); b = buf.getvalue()
open(os.path.join(d, "trunc.npy"), "wb").write(b[: len(b) // 2])
bufz = io.BytesIO(); np.savez(bufz, x=np.zeros((1000, 100))); bz = bufz.getvalue()
open(os.path.join(d, "trunc.npz"), "wb").write(bz[: len(bz) // 2])
progs = [
    f"import gzip\ndata = gzip.open({os.path.join(d,'trunc.gz')!r}).read()\n",
    f"import gzip\ndata = gzip.open({os.path.join(d,'notgz.gz')!r}).read()\n",
    f"import zipfile\nz = zipfile.ZipFile({os.path.join(d,'bad.zip')!r})\n",
    f"import tarfile\nt = tarfile.open({os.path.join(d,'bad.tar')!r})\n",
    f"import numpy as np\nx = np.load({os.path.join(d,'trunc.npy')!r})\n",
    f"import numpy as np\nx = np.load({os.path.join(d,'trunc.npz')!r})\n",
]
for p in progs:
    r = subprocess.run([PY, "-c", p], capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
