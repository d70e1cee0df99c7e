#!/usr/bin/env bash
# Downloads (here, on a Debian 12 machine with apt) the .deb files of the libraries the build
# needs into build-deps/, for a device machine whose image may lack them and cannot fetch
# anything: carry build-deps to it, and bench/gpu_check.sh unpacks them into a private prefix
# when CMake cannot find the system's copies. About 32 MB. Nothing is installed here.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/build-deps"
mkdir -p "$dest"
cd "$dest"
# Headers, CMake configs and the shared libraries they link, with the runtime libraries of
# OpenMPI and OpenBLAS that a CUDA image is least likely to hold.
apt-get download \
  libyaml-cpp-dev libyaml-cpp0.7 \
  libboost1.74-dev libboost-graph1.74-dev libboost-graph1.74.0 libboost-regex1.74.0 \
  nlohmann-json3-dev libcli11-dev catch2 \
  libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libgfortran5 \
  libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libhwloc15 libpmix2 \
  libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 \
  libpsm2-2 libpsm-infinipath1
du -sh "$dest"
