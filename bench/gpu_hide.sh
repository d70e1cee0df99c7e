#!/usr/bin/env bash
# Runs a command where this machine's copies of what a GPU bundle holds are hidden, so it can
# only use the bundle's (bench/gpu_bundle.sh; the CPU rehearsal of bench/gpu_check.sh):
#
#   bench/gpu_hide.sh BUNDLE CMD [ARGS...]
#
# In a private mount namespace (unshare -m; root), /dev/null is bind-mounted over every file the
# bundle's manifest.json says it copied from this machine (the real files, so every symbolic
# link to them reads an empty file too), and an empty file system over OpenMPI's, PMIx's, hwloc's
# and OpenBLAS's folders and /etc/openmpi. A library the bundle lacks then fails to load,
# loudly. Only CMD and what it starts see this: wrap the bundle's binaries, not python or
# the tools around them (they may need the hidden libz or libudev themselves).
# GPU_HIDE_LIST=FILE writes the hidden paths to FILE.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: gpu_hide.sh BUNDLE CMD [ARGS...]" >&2; exit 2; }
bundle="$(cd "$1" && pwd)"
shift
[ "$(id -u)" = 0 ] || { echo "gpu_hide: needs root (unshare -m, mount --bind)" >&2; exit 1; }
syslib=/usr/lib/x86_64-linux-gnu
list="$(python3 - "$bundle/manifest.json" "$syslib" <<'EOF'
import json, os, sys
manifest, syslib = sys.argv[1:3]
files, dirs = set(), set()
for e in json.load(open(manifest))["files"]:
    src = e["from"]
    if not src.startswith(("/usr/", "/lib", "/etc/")):
        continue  # built here
    (dirs if os.path.isdir(src) else files).add(os.path.realpath(src))
# Debian's shared OpenBLAS under every name, and the folders of run-time plugins and defaults.
for name in ("libopenblas.so.0", "libblas.so.3", "libgomp.so.1"):
    p = os.path.join(syslib, name)
    if os.path.exists(p):
        files.add(os.path.realpath(p))
for d in ("openmpi", "pmix2", "hwloc", "openblas-pthread", "openblas-openmp", "openblas-serial"):
    dirs.add(os.path.join(syslib, d))
dirs.add("/etc/openmpi")
dirs = sorted(d for d in dirs if os.path.isdir(d))
dirs = [d for d in dirs if not any(d.startswith(o + "/") for o in dirs)]
for d in dirs:
    print("d " + d)
for f in sorted(f for f in files if os.path.isfile(f)):
    if not any(f.startswith(d + "/") for d in dirs):  # hidden with its folder
        print("f " + f)
EOF
)"
[ -n "${GPU_HIDE_LIST:-}" ] && echo "$list" >"$GPU_HIDE_LIST"
# exec: a signal for this script (timeout's) reaches the command itself.
exec unshare -m --propagation private bash -c '
  set -e
  list="$1"; shift
  while read -r kind path; do
    [ -n "$path" ] || continue
    if [ "$kind" = d ]; then mount -t tmpfs -o ro,size=4k gpu_hide "$path"
    else mount --bind /dev/null "$path"; fi
  done <<<"$list"
  export MUONPLAN_HIDDEN=1
  exec "$@"' gpu_hide "$list" "$@"
