#!/usr/bin/env python3
"""Produces near misses for syntax_error rules (a job that goes on fine): Python's
SyntaxWarning lines printed at compile time for an invalid escape sequence and for
"is" with a literal; the program then runs to completion."""
import subprocess
import sys

src = 'import re\npat = re.compile("\\d+")\nx = 1\nif x is 1:\n    print("training step ok")\n'
subprocess.run([sys.executable, "-c", src])
