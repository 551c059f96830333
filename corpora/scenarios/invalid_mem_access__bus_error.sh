#!/bin/bash
# Reproduces: SIGBUS from touching a memory-mapped file past its end after the file was
# truncated (as with a dataset file shrunk under a running job, or an exhausted /dev/shm);
# C program and Python (with faulthandler) both shown.
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"
ulimit -c unlimited
cat > bus.c <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
int main(void) {
    int fd = open("data.bin", O_RDWR | O_CREAT | O_TRUNC, 0600);
    ftruncate(fd, 1 << 16);
    volatile char *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ftruncate(fd, 0);
    printf("reading mapped file\n"); fflush(stdout);
    return p[4096];
}
C
gcc -o bus bus.c
bash -c ./bus 2>&1
echo "exit code: $?"
cat > bus.py <<'PY'
import mmap, os
with open("data2.bin", "wb") as f:
    f.truncate(1 << 16)
f = open("data2.bin", "r+b")
m = mmap.mmap(f.fileno(), 1 << 16)
os.truncate("data2.bin", 0)
print(m[8192])
PY
${PY:-python3} -X faulthandler bus.py 2>&1
echo "exit code: $?"
