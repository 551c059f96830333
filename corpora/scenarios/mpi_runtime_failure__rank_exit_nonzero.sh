#!/usr/bin/env bash
# Reproduces: an Open MPI job in which rank 1 returns exit code 2 without calling
# MPI_Finalize; mpirun prints "Primary job terminated normally, but 1 process
# returned a non-zero exit code" and "mpirun detected that one or more processes
# exited with non-zero status".
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_orte_base_help_aggregate=0
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/exit2.c" <<'CEOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rank; MPI_Init(&argc, &argv); MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) { fprintf(stderr, "rank 1: cannot continue\n"); exit(2); }
    MPI_Finalize(); return 0;
}
CEOF
mpicc -o "$d/exit2" "$d/exit2.c" || exit 1
timeout 30 mpirun --oversubscribe -np 2 "$d/exit2" 2>&1
echo "mpirun exit status: $?"
