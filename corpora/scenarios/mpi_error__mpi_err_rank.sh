#!/usr/bin/env bash
# Reproduces: an Open MPI program that sends to a rank that does not exist;
# the default MPI_ERRORS_ARE_FATAL handler prints "MPI_ERR_RANK: invalid rank".
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_orte_base_help_aggregate=0
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
cat > "$d/badrank.c" <<'CEOF'
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, size, v = 7;
    MPI_Init(&argc, &argv); MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) MPI_Send(&v, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
    MPI_Finalize(); return 0;
}
CEOF
mpicc -o "$d/badrank" "$d/badrank.c" || exit 1
# Open MPI 4.1.4 (Debian) sometimes loses the help text of a dying rank in a
# show_help race ("ORTE_ERROR_LOG: Data unpack would read past end of buffer");
# retry up to 5 times so the script prints the full message deterministically.
for attempt in 1 2 3 4 5; do
  out=$(timeout 5 mpirun --oversubscribe -np 2 "$d/badrank" 2>&1); rc=$?
  case "$out" in *"MPI_ERR_RANK"*) break;; esac
done
printf '%s\n' "$out"
echo "mpirun exit status: $rc"
