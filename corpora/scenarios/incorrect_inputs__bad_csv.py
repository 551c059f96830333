#!/usr/bin/env python3
# Reproduces: a CSV data file that the csv module cannot parse (a runaway quoted
# field, e.g. an unbalanced quote in a corrupted file): _csv.Error.
import subprocess, sys, os, tempfile
PY = sys.executable
d = "/tmp/fc_bad_csv"; os.makedirs(d, exist_ok=True)
open(os.path.join(d, "big.csv"), "w").write('id,text\n1,"' + "x" * 200000 + '"\n')
for n in ["big.csv"]:
    p = f"import csv\nrows = list(csv.reader(open({os.path.join(d, n)!r}, newline='')))\n"
    r = subprocess.run([PY, "-c", p], capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
