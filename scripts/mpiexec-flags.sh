#!/usr/bin/env bash
# The mpiexec flags the multi-rank tests need on this machine, as a CMake list for
# -DMPIEXEC_PREFLAGS (scripts/build.sh, scripts/sanitize.sh). OpenMPI's: --oversubscribe, as
# the tests start up to 8 ranks and CI has 2 cores; --allow-run-as-root when run as root (CI
# runs as root, and OpenMPI refuses it otherwise). Another MPI, or a machine that needs
# neither, configures with its own -DMPIEXEC_PREFLAGS.
flags="--oversubscribe"
[ "$(id -u)" = 0 ] && flags="--allow-run-as-root;$flags"
echo "$flags"
