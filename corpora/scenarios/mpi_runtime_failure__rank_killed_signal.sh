#!/usr/bin/env bash
# Reproduces: an Open MPI job in which rank 1 is killed by SIGKILL mid-run
# (as the OOM killer or an operator would do); mpirun reports
# "mpirun noticed that process rank 1 ... exited on signal 9 (Killed)".
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_orte_base_help_aggregate=0
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/killed.c" <<'CEOF'
#include <mpi.h>
#include <stdio.h>
#include <signal.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, i; double x = 1.0, y;
    MPI_Init(&argc, &argv); MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (i = 0; i < 3; i++) {
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0) { printf("step %d allreduce %.1f\n", i, y); fflush(stdout); }
    }
    if (rank == 1) kill(getpid(), SIGKILL);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize(); return 0;
}
CEOF
mpicc -o "$d/killed" "$d/killed.c" || exit 1
timeout 30 mpirun --oversubscribe -np 2 "$d/killed" 2>&1
echo "mpirun exit status: $?"
