#!/usr/bin/env bash
# Reproduces: mpirun asked for more processes (-np 8) than this host has slots;
# Open MPI refuses with "There are not enough slots available in the system".
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 30 mpirun -np 64 hostname 2>&1
echo "mpirun exit status: $?"
