#!/bin/bash
# Reproduces: a C++ program (as in a framework's native code) whose allocation fails
# under an address-space limit; the uncaught std::bad_alloc terminates the process and
# bash reports the SIGABRT with "Aborted (core dumped)".
set -u
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cat > "$dir/alloc.cpp" <<'CPP'
#include <vector>
#include <cstdio>
int main() {
    std::vector<std::vector<char>> blocks;
    for (int i = 0; i < 1000; ++i) {
        blocks.emplace_back(256u << 20, 1);
        std::printf("allocated %d MiB\n", (i + 1) * 256); std::fflush(stdout);
    }
}
CPP
g++ -O1 -o "$dir/alloc" "$dir/alloc.cpp"
cd "$dir"
bash -c 'ulimit -c unlimited; ulimit -v 1200000; ./alloc; echo "exit code: $?"' 2>&1
