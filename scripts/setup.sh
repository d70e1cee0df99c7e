#!/usr/bin/env bash
# Installs the Debian packages muonplan builds against (docs/architecture.md), only when missing.
# Idempotent and non-interactive; safe to run on every build.
set -euo pipefail
pkgs=(cmake g++ make libopenmpi-dev openmpi-bin libboost-graph-dev libyaml-cpp-dev pybind11-dev
      python3-dev catch2 python3-matplotlib python3-numpy libcli11-dev nlohmann-json3-dev
      libopenblas-dev libdnnl-dev  # the CPU backend's GEMMs: oracle (OpenBLAS) and bf16 (oneDNN)
      clang libclang-rt-14-dev  # clang + its runtimes: libFuzzer, ASan (scripts/fuzz.sh)
      libtomlplusplus-dev  # toml++: prime-rl trainer configs (planner/src/prime_rl/toml_tree.cc)
      patchelf xz-utils  # bench/gpu_bundle.sh (and its test, gpu_bundle): ELF paths, oneDNN packed
      python3-yaml)  # the tests' and scripts' YAML (gen-matrix-runs.py, cli.doc_topology_keys)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  # shellcheck source=scripts/progress.sh
  . "$(dirname "$0")/progress.sh"
  echo "setup: ${#missing[@]} Debian package(s) missing: ${missing[*]}" >&2
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  stage_start "setup: apt-get update"
  $sudo apt-get update -qq
  stage_done
  stage_start "setup: installing them (apt-get install; a few minutes on a fresh machine)"
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  stage_done
fi
