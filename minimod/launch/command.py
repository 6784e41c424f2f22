"""Setting a job up: finding mpiexec and its flavour, reading hostfiles, splitting a Python
COMMAND into interpreter and program, BLAS threads per rank, and the mpiexec command line.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from .protocol import RANK_FLAG, LaunchError


def find_mpiexec(explicit: str | None = None) -> str:
    """mpiexec: `explicit`, else next to this interpreter (a venv with the `dist` extra),
    else on PATH."""
    if explicit:
        path = shutil.which(explicit) or (explicit if os.path.exists(explicit) else None)
        if path is None:
            raise LaunchError("--mpiexec %r: no such program" % explicit)
        return path
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec")
    if found:
        return found
    raise LaunchError("no mpiexec next to %s or on PATH; install the dist extra "
                      "(pip install minimod[dist]: mpi4py and MPICH) or pass --mpiexec"
                      % sys.executable)


def mpi_flavour(mpiexec: str) -> str:
    """'mpich' (Hydra), 'openmpi' or 'unknown', from `mpiexec --version`."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if "HYDRA" in out or "MPICH" in out.upper():
        return "mpich"
    if "Open MPI" in out or "OpenRTE" in out or "open-mpi" in out:
        return "openmpi"
    return "unknown"


def parse_hostfile(path: str) -> list[tuple[str, int]]:
    """[(host, slots)] from a hostfile in any of the formats in the module docstring."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as err:
        raise LaunchError("hostfile %r cannot be read: %s" % (path, err.strerror)) from None
    hosts = []
    for lineno, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        slots = "1"
        parts = line.split()
        if len(parts) == 1 and ":" in parts[0]:
            host, slots = parts[0].rsplit(":", 1)
        elif len(parts) == 1:
            host = parts[0]
        elif len(parts) == 2 and parts[1].startswith("slots="):
            host, slots = parts[0], parts[1][len("slots="):]
        else:
            raise LaunchError("hostfile %s line %d: %r is not 'host', 'host:SLOTS' or "
                              "'host slots=SLOTS'" % (path, lineno, raw))
        if not host or not slots.isdigit() or int(slots) < 1:
            raise LaunchError("hostfile %s line %d: %r needs a host name and a positive "
                              "number of slots" % (path, lineno, raw))
        hosts.append((host, int(slots)))
    if not hosts:
        raise LaunchError("hostfile %s names no host" % path)
    return hosts


def _write_hostfile(hosts: list, flavour: str, directory: str) -> str:
    path = os.path.join(directory, "hostfile")
    if flavour == "openmpi":
        text = "".join("%s slots=%d\n" % h for h in hosts)
    else:
        text = "".join("%s:%d\n" % h for h in hosts)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return path


def _parse_ports(text: str) -> tuple[int, int]:
    try:
        lo, hi = (int(x) for x in text.split(":"))
    except ValueError:
        raise LaunchError("--port-range must be LO:HI, e.g. 50000:50100, got %r" % text) from None
    if not 1024 <= lo <= hi <= 65535:
        raise LaunchError("--port-range %r: need 1024 <= LO <= HI <= 65535" % text)
    return lo, hi


_ARG_OPTS = ("-W", "-X")  # interpreter options that take the next word as their value


def _is_python(word: str) -> bool:
    base = os.path.basename(word)
    return base.startswith("python") or os.path.realpath(word) == os.path.realpath(
        sys.executable)


def split_python(command: list[str]) -> tuple[list[str], list[str]] | None:
    """(interpreter and its options, program and its arguments) for a Python COMMAND; None for
    anything else. `train.py ...` runs with this interpreter."""
    if not command:
        raise LaunchError("no COMMAND after `--`: e.g. -- python train.py")
    first = command[0]
    if first.endswith(".py"):
        return [sys.executable], list(command)
    if not _is_python(first):
        return None
    # a bare `python`/`python3` means the interpreter running the launcher (which has
    # minimod and mpi4py); a path to another interpreter is used as given
    interp, i = [sys.executable if os.sep not in first else first], 1
    while i < len(command) and command[i].startswith("-") and command[i] not in ("-m", "-c",
                                                                                  "-"):
        interp.append(command[i])
        if command[i] in _ARG_OPTS and i + 1 < len(command):
            interp.append(command[i + 1])
            i += 1
        i += 1
    program = command[i:]
    if not program:
        raise LaunchError("COMMAND %r runs no program: give a script, -m MODULE or -c CODE"
                          % " ".join(command))
    if program[0] in ("-m", "-c") and len(program) < 2:
        raise LaunchError("COMMAND %r: %s needs an argument" % (" ".join(command), program[0]))
    return interp, program


_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def rank_threads(n: int, hosts: list | None = None, cores: int | None = None) -> int:
    """BLAS threads per rank so that the ranks on one machine share its cores: the cores
    (`os.cpu_count()` here; every host is assumed alike) over the most ranks any host runs."""
    cores = cores or os.cpu_count() or 1
    if hosts:
        total = sum(slots for _, slots in hosts)
        # mpiexec fills hosts slot by slot and wraps around when n exceeds the slots
        per_host = max(-(-n * slots // total) for _, slots in hosts)
    else:
        per_host = n
    return max(1, cores // max(1, per_host))


def running_as_root() -> bool:
    """Whether this process runs as root (False where the OS has no user ids)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def build_command(mpiexec: str, flavour: str, n: int, command: list[str],
                  hostfile: str | None = None, ports: tuple | None = None,
                  iface: str | None = None, env_names: tuple = ()) -> list[str]:
    """The mpiexec command line for `command` on `n` ranks."""
    cmd = [mpiexec, "-n", str(n)]
    if flavour == "openmpi":
        if running_as_root():  # Open MPI refuses root (containers, GPU machines) unless told
            cmd += ["--allow-run-as-root"]
        if hostfile:
            cmd += ["--hostfile", hostfile]
        for name in env_names:
            cmd += ["-x", name]
        if ports:
            lo, hi = ports
            cmd += ["--mca", "btl_tcp_port_min_v4", str(lo),
                    "--mca", "btl_tcp_port_range_v4", str(hi - lo + 1),
                    "--mca", "oob_tcp_dynamic_ipv4_ports", "%d-%d" % (lo, hi)]
        if iface:
            cmd += ["--mca", "btl_tcp_if_include", iface, "--mca", "oob_tcp_if_include", iface]
    else:
        if hostfile:
            cmd += ["-f", hostfile]
        if iface:
            cmd += ["-iface", iface]
    split = split_python(command)
    if split is None:
        return cmd + list(command)
    interp, program = split
    return cmd + interp + ["-m", "minimod.launch", RANK_FLAG, "--"] + program
