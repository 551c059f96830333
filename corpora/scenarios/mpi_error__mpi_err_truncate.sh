#!/usr/bin/env bash
# Reproduces: ranks disagree on a message size (rank 0 sends 8 ints, rank 1
# receives into 4); Open MPI fails with "MPI_ERR_TRUNCATE: message truncated".
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_orte_base_help_aggregate=0
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/trunc.c" <<'CEOF'
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, buf[8] = {0};
    MPI_Init(&argc, &argv); MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) MPI_Send(buf, 8, MPI_INT, 1, 0, MPI_COMM_WORLD);
    else if (rank == 1) MPI_Recv(buf, 4, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize(); return 0;
}
CEOF
mpicc -o "$d/trunc" "$d/trunc.c" || exit 1
# Open MPI 4.1.4 (Debian) sometimes loses the help text of a dying rank in a
# show_help race ("ORTE_ERROR_LOG: Data unpack would read past end of buffer");
# retry up to 5 times so the script prints the full message deterministically.
for attempt in 1 2 3 4 5; do
  out=$(timeout 5 mpirun --oversubscribe -np 2 "$d/trunc" 2>&1); rc=$?
  case "$out" in *"MPI_ERR_TRUNCATE"*) break;; esac
done
printf '%s\n' "$out"
echo "mpirun exit status: $rc"
