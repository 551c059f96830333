#!/usr/bin/env python3
# Reproduces: a JSON / JSON-lines data or annotation file that is malformed or empty:
# json.decoder.JSONDecodeError with its various wordings.
import subprocess, sys, textwrap, os, tempfile
PY = sys.executable
d = "/tmp/fc_bad_jsonl"; os.makedirs(d, exist_ok=True)
files = {
    "train.jsonl": '{"text": "hello", "label": 1}\n{"text": "wor',  # truncated line
    "empty.json": "",
    "two.json": '{"a": 1}\n{"a": 2}\n',
    "annotations.json": "{'images': []}",
}
for n, c in files.items():
    open(os.path.join(d, n), "w").write(c)
progs = [
    f"import json\nfor line in open({os.path.join(d,'train.jsonl')!r}):\n    ex = json.loads(line)\n",
    f"import json\nanns = json.load(open({os.path.join(d,'empty.json')!r}))\n",
    f"import json\nanns = json.load(open({os.path.join(d,'two.json')!r}))\n",
    f"import json\nanns = json.load(open({os.path.join(d,'annotations.json')!r}))\n",
]
for p in progs:
    r = subprocess.run([PY, "-c", p], capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
