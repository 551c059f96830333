#!/usr/bin/env bash
# Reproduces: mpirun told to start a rank on a host that cannot be reached
# (the name does not resolve); ssh fails and ORTE reports it was unable to
# start its daemon on that node.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 30 mpirun -H gpu-node-does-not-exist.invalid -np 1 hostname 2>&1
echo "mpirun exit status: $?"
