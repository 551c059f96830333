#!/usr/bin/env python3
# Reproduces: a training config file in YAML that does not parse (PyYAML ScannerError /
# ParserError), as printed when the training script loads it.
import subprocess, sys, os, tempfile
PY = sys.executable
d = "/tmp/fc_bad_yaml_config"; os.makedirs(d, exist_ok=True)
open(os.path.join(d, "a.yaml"), "w").write("model:\n  name: resnet50\n  lr: 0.1\n batch_size: 32\n")
open(os.path.join(d, "b.yaml"), "w").write("data:\n  path: /data/train\n\ttransforms: [flip]\n")
open(os.path.join(d, "c.yaml"), "w").write("optimizer:\n  name: adam\n  betas: [0.9, 0.999\nepochs: 10\n")
for n in ["a.yaml", "b.yaml", "c.yaml"]:
    p = f"import yaml\ncfg = yaml.safe_load(open({os.path.join(d, n)!r}))\n"
    r = subprocess.run([PY, "-c", p], capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
