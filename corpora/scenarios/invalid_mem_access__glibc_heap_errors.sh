#!/bin/bash
# Reproduces: glibc's heap-consistency checks aborting small C programs with memory bugs
# (free of a pointer not from malloc, double free, freeing an offset mmap'ed chunk,
# corrupting the top chunk, overflowing into the next chunk's header). Each program is
# run by a non-interactive bash so its "Aborted (core dumped)" report is shown too.
set -u
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > invalid_free.c <<'C'
#include <stdlib.h>
int main(void) { char *p = malloc(64); free(p + 16); return 0; }
C
cat > double_free.c <<'C'
#include <stdlib.h>
int main(void) { char *p = malloc(64); free(p); free(p); return 0; }
C
cat > munmap_chunk.c <<'C'
#include <stdlib.h>
int main(void) {
    char *p = malloc(1 << 20);                  /* served by mmap */
    ((size_t *)(p + 64))[-1] = 0x1000 | 2;      /* a fake "mmapped" chunk header */
    free(p + 64); return 0;
}
C
cat > corrupted_top.c <<'C'
#include <stdlib.h>
#include <string.h>
int main(void) { char *p = malloc(24); memset(p, 0x41, 40); char *q = malloc(1 << 14); (void)q; return 0; }
C
cat > double_free_fasttop.c <<'C'
#include <stdlib.h>
int main(void) {
    void *t[7]; for (int i = 0; i < 7; ++i) t[i] = malloc(32);
    void *a = malloc(32);
    for (int i = 0; i < 7; ++i) free(t[i]);
    free(a); free(a); return 0;
}
C
cat > double_free_prev.c <<'C'
#include <stdlib.h>
int main(void) { char *a = malloc(0x500); char *g = malloc(0x20); (void)g; free(a); free(a); return 0; }
C
cat > double_free_out.c <<'C'
#include <stdlib.h>
int main(void) { char *a = malloc(0x500); char *g = malloc(0x20); (void)g; ((size_t *)a)[-1] = 0x100000 | 1; free(a); return 0; }
C
cat > invalid_next_size.c <<'C'
#include <stdlib.h>
#include <string.h>
int main(void) { char *a = malloc(0x500); char *b = malloc(0x500); char *g = malloc(0x20); (void)g; memset(a, 0x41, 0x500 + 16); free(a); (void)b; return 0; }
C
ulimit -c unlimited
for prog in invalid_free double_free munmap_chunk corrupted_top double_free_fasttop double_free_prev double_free_out invalid_next_size; do
    gcc -O0 -o "$prog" "$prog.c" 2>/dev/null || continue
    echo "== $prog"
    bash -c "./$prog" 2>&1
    echo "exit code: $?"
done
