"""What ctest hands the Python tests (tests/CMakeLists.txt): the muonplan binary, the source
tree, mpiexec and its flags (MPIEXEC_PREFLAGS, space-separated), and how to run them."""
import os
import shlex
import subprocess
import sys

BIN = os.environ["MUONPLAN_BIN"]
ROOT = os.environ["MUONPLAN_SOURCE_DIR"]
MPIEXEC = [os.environ.get("MPIEXEC", "mpiexec"), *shlex.split(os.environ.get("MPIEXEC_PREFLAGS", ""))]
# One OpenMP thread per rank: several ranks share two cores in CI.
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def path(rel):
    return os.path.join(ROOT, rel)


def mpiexec(ranks, *command):
    """Runs `command` on `ranks` MPI ranks; the CompletedProcess, output captured as text."""
    return subprocess.run([*MPIEXEC, "-n", str(ranks), *command], capture_output=True, text=True,
                          env=ENV)


def run_example(name, *args):
    """Runs examples/NAME with this Python from the source tree; output captured as text."""
    return subprocess.run([sys.executable, path("examples/" + name), *args], capture_output=True,
                          text=True, cwd=ROOT, env=ENV)
