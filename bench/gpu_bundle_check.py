#!/usr/bin/env python3
"""Checks a GPU bundle (bench/gpu_bundle.sh): every ELF file's NEEDED libraries are in the
bundle's lib/ or among the libraries a device image provides, the executables look in lib/
first, nothing the device provides is bundled, and the folder fits its size limit.

    gpu_bundle_check.py DIR [--max-mib 40] [--json]
    gpu_bundle_check.py --manifest DIR ORIGINS [--max-mib 40]   (gpu_bundle.sh: also writes
                                                                 DIR/manifest.json)

Prints one line per problem and exits 1 on any; --json prints the findings as JSON.
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys

# The libraries a device image provides: the C runtime (torch needs libstdc++ and libgcc_s
# too) and CUDA's, found at run time (gpu_check.sh). gpu_bundle.sh holds the same list.
DEVICE_LIBS = {
    "ld-linux-x86-64.so.2": "glibc",
    "libc.so.6": "glibc",
    "libm.so.6": "glibc",
    "libpthread.so.0": "glibc",
    "libdl.so.2": "glibc",
    "librt.so.1": "glibc",
    "libutil.so.1": "glibc",
    "libresolv.so.2": "glibc",
    "libstdc++.so.6": "the image's C++ runtime (torch loads it)",
    "libgcc_s.so.1": "the image's C++ runtime (torch loads it)",
    "libcuda.so.1": "the driver",
    "libcudart.so.13": "CUDA toolkit lib64, else the nvidia-cuda-runtime wheel",
    "libcublas.so.13": "CUDA toolkit lib64, else the nvidia-cublas wheel",
    "libcublasLt.so.13": "CUDA toolkit lib64, else the nvidia-cublas wheel",
    "libnccl.so.2": "CUDA toolkit lib64, else the nvidia-nccl-cu13 wheel",
}


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def dynamic(path):
    """(NEEDED list, RPATH, RUNPATH) of a 64-bit little-endian ELF file, as `readelf -d` shows
    them, read here (a device image need not have binutils): the SHT_DYNAMIC section's entries,
    their strings from the section it links to."""
    with open(path, "rb") as f:
        data = f.read()
    if data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    needed, rpath, runpath = [], None, None
    for sh_name, sh_type, _, _, off, size, link, _, _, entsize in sections:
        if sh_type != 6:  # SHT_DYNAMIC
            continue
        stroff = sections[link][4]
        def string(at):
            end = data.index(b"\0", stroff + at)
            return data[stroff + at:end].decode()
        for i in range(size // (entsize or 16)):
            tag, val = struct.unpack_from("<qQ", data, off + i * (entsize or 16))
            if tag == 0:  # DT_NULL
                break
            if tag == 1:
                needed.append(string(val))
            elif tag == 15:
                rpath = string(val)
            elif tag == 29:
                runpath = string(val)
    return needed, rpath, runpath


def elf_files(bundle):
    for top in ("bin", "lib"):
        for dirpath, _, names in os.walk(os.path.join(bundle, top)):
            for n in sorted(names):
                p = os.path.join(dirpath, n)
                if not os.path.islink(p) and is_elf(p):
                    yield os.path.relpath(p, bundle)


def folder_bytes(bundle):
    """What the bundle carries: a library env.sh has unpacked beside its NAME.xz (a rehearsal or
    an earlier run used the bundle) is not carried, and not counted."""
    total = 0
    for dirpath, _, names in os.walk(bundle):
        for n in names:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p) and n + ".xz" not in names:
                total += os.path.getsize(p)
    return total


def check(bundle, max_mib):
    problems = []
    # A library that travels as NAME.xz (gpu_bundle.sh, step 4b) is there: env.sh unpacks it.
    libs = {n[:-3] if n.endswith(".xz") else n for n in os.listdir(os.path.join(bundle, "lib"))}
    files = {}
    for rel in elf_files(bundle):
        needed, rpath, runpath = dynamic(os.path.join(bundle, rel))
        missing = [n for n in needed if n not in libs and n not in DEVICE_LIBS]
        files[rel] = {"needed": needed, "rpath": rpath, "runpath": runpath}
        for n in missing:
            problems.append(f"{rel}: needs {n}, neither in lib/ nor provided by the device")
        if rel.startswith("bin/") and rpath != "$ORIGIN/../lib":
            problems.append(f"{rel}: DT_RPATH is {rpath!r}, not $ORIGIN/../lib")
        if runpath is not None:
            problems.append(f"{rel}: has DT_RUNPATH {runpath!r} (hides the executable's RPATH)")
    for n in sorted(libs & set(DEVICE_LIBS)):
        problems.append(f"lib/{n}: bundled, but the device provides it ({DEVICE_LIBS[n]})")
    total = folder_bytes(bundle)
    if total > max_mib * 2**20:
        problems.append(f"{total / 2**20:.1f} MiB, over the {max_mib} MiB limit")
    device_needed = sorted({n for f in files.values() for n in f["needed"] if n in DEVICE_LIBS})
    return problems, files, total, device_needed


def packages_of(paths):
    """{path: "package version"} for the paths dpkg knows, in one dpkg -S call."""
    if not paths:
        return {}
    out = subprocess.run(["dpkg", "-S"] + sorted(paths), capture_output=True, text=True).stdout
    owner = {}
    for line in out.splitlines():
        pkg, _, path = line.partition(": ")
        if path in paths:
            owner[path] = pkg.split(",")[0].strip()
    versions = {}
    for pkg in set(owner.values()):
        versions[pkg] = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg],
                                       capture_output=True, text=True).stdout.strip()
    return {p: f"{pkg} {versions[pkg]}" for p, pkg in owner.items()}


def newest_versions(bundle):
    """The newest GLIBC_ and GLIBCXX_ symbol versions any bundled file asks for (objdump -T,
    here): what the device's C runtime must at least be."""
    found = {"GLIBC": [], "GLIBCXX": []}
    for rel in elf_files(bundle):
        out = subprocess.run(["objdump", "-T", os.path.join(bundle, rel)], capture_output=True,
                             text=True).stdout
        for kind, ver in re.findall(r"\b(GLIBC|GLIBCXX)_(\d+(?:\.\d+)+)\b", out):
            found[kind].append(tuple(int(x) for x in ver.split(".")))
    return {k.lower(): ".".join(map(str, max(v))) for k, v in found.items() if v}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("origins", nargs="?")
    ap.add_argument("--manifest", action="store_true")
    ap.add_argument("--max-mib", type=float, default=40)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    problems, files, total, device_needed = check(a.bundle, a.max_mib)
    if a.manifest:
        origins = {}
        with open(a.origins) as f:
            for line in f:
                rel, src = line.rstrip("\n").split("\t")
                origins[rel] = src
        entries = []
        packages = packages_of({s for s in origins.values() if s.startswith(("/usr/", "/lib"))})
        for rel, src in sorted(origins.items()):
            p = os.path.join(a.bundle, rel)
            size = os.path.getsize(p) if os.path.isfile(p) else folder_bytes(p)
            entry = {"path": rel, "bytes": size, "from": src}
            if src in packages:
                entry["package"] = packages[src]
            entries.append(entry)
        git = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe",
                              "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
        manifest = {
            "schema": "muonplan.gpu_bundle/1",
            "commit": git,
            "bytes": total,
            "files": entries,
            "device_libraries": {n: DEVICE_LIBS[n] for n in device_needed},
            "needs_at_least": newest_versions(a.bundle),
            "openblas_cores": {"kept": ["Prescott", "Haswell", "SkylakeX"],
                               "bound": {"Zen": "Haswell", "Cooperlake": "SkylakeX",
                                         "others": "Prescott"}},
        }
        with open(os.path.join(a.bundle, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
    if a.json:
        print(json.dumps({"problems": problems, "bytes": total, "device_needed": device_needed,
                          "files": files}, indent=1))
    for p in problems:
        print(f"gpu_bundle_check: {p}", file=sys.stderr)
    if not a.json and not problems:
        print(f"gpu_bundle_check: {len(files)} ELF files, {total / 2**20:.1f} MiB; needs from the "
              f"device: {' '.join(device_needed)}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
