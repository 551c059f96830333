#!/bin/bash
# Reproduces: the same broken training scripts under the Python interpreters a cluster image may
# carry (pyenv 2.7, 3.6, 3.8, 3.11, 3.13), so every interpreter generation's SyntaxError /
# IndentationError wording is covered (e.g. 3.8 "unexpected EOF while parsing", "EOL while
# scanning string literal", 3.6 f-string "invalid syntax", 2.7 "Missing parentheses" absence).
set -u
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
cd "$d"
printf 'import os\nargs = dict(lr=0.1, epochs=10\n' > unclosed.py
printf 'data_dir = "/data/imagenet\nprint(data_dir)\n' > eol.py
printf 'def f():\n    """docstring\n    return 1\n' > triple.py
printf 'epoch = 3\nprint(f"epoch {epoch}")\nx = (y := 3)\n' > walrus.py
printf 'print "epoch", 1\n' > py2print.py
printf 'def train():\nreturn 1\n' > noindent.py
for v in 2.7.18 3.6.15 3.8.18 3.13.0; do
  PY=/root/.pyenv/versions/$v/bin/python
  [ -x "$PY" ] || continue
  echo "### python $v"
  for f in unclosed eol triple walrus py2print noindent; do $PY $f.py; echo "exit code: $?"; done
done
