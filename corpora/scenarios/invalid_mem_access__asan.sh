#!/bin/bash
# Reproduces: AddressSanitizer reports from a C program built with -fsanitize=address:
# a heap-buffer-overflow, a heap-use-after-free and a NULL dereference (SEGV).
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > bugs.c <<'C'
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int mode = argc > 1 ? atoi(argv[1]) : 0;
    char *buf = malloc(16);
    if (mode == 0) { buf[16] = 1; }
    if (mode == 1) { free(buf); buf[0] = 1; }
    if (mode == 2) { volatile int *q = (volatile int *)0; *q = 1; }
    return 0;
}
C
gcc -g -O0 -fsanitize=address -o bugs bugs.c
for m in 0 1 2; do
    echo "== mode $m"
    ASAN_OPTIONS=symbolize=0 ./bugs $m 2>&1 | head -30
done
