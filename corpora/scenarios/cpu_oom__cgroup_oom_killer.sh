#!/bin/bash
# Reproduces: the Linux kernel OOM killer inside a memory-limited cgroup (v1, as a
# container or a Slurm/YARN job would have). A Python process grows past the 300 MiB
# limit, the kernel kills it (bash prints "Killed") and logs the OOM report to dmesg;
# the kernel's lines are printed from dmesg afterwards. Needs root and a writable
# /sys/fs/cgroup/memory (true on our build VM).
set -u
cg=/sys/fs/cgroup/memory/failclass_oom_$$
mkdir "$cg" || { echo "cannot create a memory cgroup here"; exit 0; }
trap 'rmdir "$cg" 2>/dev/null' EXIT
echo $((300 * 1024 * 1024)) > "$cg/memory.limit_in_bytes"
echo $((300 * 1024 * 1024)) > "$cg/memory.memsw.limit_in_bytes" 2>/dev/null
before=$(dmesg | wc -l)
bash -c "echo \$\$ > $cg/cgroup.procs; exec ${PY:-python3} -c '
blocks = []
for i in range(100):
    blocks.append(bytearray(64 * 1024 * 1024))
    print(\"loaded shard\", i, flush=True)
'"
echo "exit code: $?"
sleep 1
echo "---- dmesg ----"
dmesg | tail -n +$((before + 1))
