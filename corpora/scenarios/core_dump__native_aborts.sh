#!/bin/bash
# Reproduces: native programs that abort with a core dump for reasons other than memory:
# an uncaught C++ exception (std::runtime_error), "terminate called without an active
# exception" (a joinable std::thread destroyed), a failed C assert(), a bare abort(),
# a "pure virtual method called", an illegal instruction (__builtin_trap / ud2),
# an integer division by zero (SIGFPE) and a SIGTRAP.
# Each runs under a non-interactive bash, whose "Aborted (core dumped)" /
# "Illegal instruction (core dumped)" report is shown.
set -u
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > runtime_error.cpp <<'CPP'
#include <stdexcept>
int main() { throw std::runtime_error("worker pool stopped"); }
CPP
cat > no_active_exception.cpp <<'CPP'
#include <thread>
#include <chrono>
int main() { std::thread t([] { std::this_thread::sleep_for(std::chrono::seconds(1)); }); return 0; }
CPP
cat > assert_fail.c <<'C'
#include <assert.h>
int main(int argc, char **argv) { (void)argv; int batch_size = argc - 1; assert(batch_size > 0); return 0; }
C
cat > bare_abort.c <<'C'
#include <stdlib.h>
#include <stdio.h>
int main(void) { fprintf(stderr, "loading model\n"); abort(); }
C
cat > pure_virtual.cpp <<'CPP'
struct Base; void call(Base *b);
struct Base { Base() { call(this); } virtual void run() = 0; virtual ~Base() {} };
struct Derived : Base { void run() override {} };
void call(Base *b) { b->run(); }
int main() { Derived d; return 0; }
CPP
cat > illegal.c <<'C'
int main(void) { __builtin_trap(); }
C
cat > fpe.c <<'C'
int main(int argc, char **argv) { (void)argv; volatile int zero = argc - 1; return 100 / zero; }
C
cat > breakpoint.c <<'C'
#include <signal.h>
int main(void) { raise(SIGTRAP); return 0; }
C
ulimit -c unlimited
for src in runtime_error.cpp no_active_exception.cpp assert_fail.c bare_abort.c pure_virtual.cpp illegal.c fpe.c breakpoint.c; do
    prog=${src%.*}
    case $src in *.cpp) g++ -O0 -pthread -o "$prog" "$src" 2>/dev/null ;; *) gcc -O0 -o "$prog" "$src" 2>/dev/null ;; esac || continue
    echo "== $prog"
    bash -c "./$prog" 2>&1
    echo "exit code: $?"
done
