#!/bin/bash
# Reproduces: bash job-script syntax errors: "syntax error near unexpected token" and
# "syntax error: unexpected end of file", plus /bin/sh (dash) wording.
set -u
d=/tmp/failclass_scenarios/$(basename "$0" .sh); rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
printf '#!/bin/bash\necho start\nif [ -n "$X" ]; then\n  echo x\nfi fi\n' > "$d/run.sh"
printf '#!/bin/bash\necho start\nfor i in 1 2; do\n  echo $i\n' > "$d/run2.sh"
printf 'echo start\nfoo() {\n  echo x\n' > "$d/run3.sh"
printf 'echo start\n(( x = 1 ))\nif true then\nfi\n' > "$d/run4.sh"
cd "$d"; bash run.sh; echo "exit code: $?"; bash run2.sh; echo "exit code: $?"; sh run3.sh; echo "exit code: $?"; sh run4.sh; echo "exit code: $?"
printf '#!/bin/bash\necho "start\nexit 0\n' > "$d/run5.sh"
bash run5.sh; echo "exit code: $?"
