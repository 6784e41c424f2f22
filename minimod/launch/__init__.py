"""Start a distributed (dist_sync) job over MPI and watch it.

    python -m minimod.launch -n N [--hostfile FILE] [--timeout S] [--stall-timeout S]
                             [--port-range LO:HI] [--iface IF] [--mpiexec PATH] -- COMMAND ...

COMMAND is a Python program as you would run it alone: `python train.py --lr 0.1`,
`train.py --lr 0.1`, `python -m package.module ...` or `python -c CODE`; a bare `python`
(or `python3`) stands for the interpreter running the launcher, a path to another one is kept.
Each of the N ranks runs it under `mpiexec` inside a small runner that gives
`python -m mpi4py` semantics: an exception (or a non-zero `sys.exit`) in any rank prints the
traceback with a line naming the rank, then calls `MPI_Abort`, which ends every rank at once
instead of leaving the others waiting forever in their next allreduce. When the job ends this
way the launcher says which rank failed and with what error, and exits with a non-zero status.
Anything else (`-- ./a.out`) is passed to mpiexec unchanged.

A stalled rank (a deadlock, a hung file system, a rank waiting for input) stalls every rank,
since the others wait for it in a collective. Two watchdogs end such a job, killing the whole
process group of mpiexec (and every local rank):

* `--timeout S`: the job may run for at most S seconds in all;
* `--stall-timeout S`: no rank may go S seconds without finishing a kvstore collective (an
  allreduce, broadcast or barrier of a dist kvstore) - set it above the longest stretch your
  program spends without one (start-up, evaluation, checkpoints).

Either message lists what each local rank was doing (waiting in collective #k, or computing
since #k-1), which names the stalled rank. Exit status: that of the failed rank, 124 after a
watchdog ended the job, 2 for bad launcher arguments.

Several machines: `--hostfile FILE` lists the hosts, one per line: `host`, `host:SLOTS` or
`host slots=SLOTS` (`#` starts a comment). mpiexec starts the remote ranks over ssh, so every
host needs password-less ssh from this one, the same Python environment at the same path, and
the program and its data at the same paths. `--port-range LO:HI` confines MPI's TCP ports to
a range a firewall lets through; `--iface IF` picks the network interface. See docs/distributed.md.

BLAS threads: ranks sharing a machine also share its cores, and BLAS pools that each take every
core oversubscribe them (two 2-thread ranks on 2 cores ran an MLP step 5x slower than one rank).
Unless OMP_NUM_THREADS, OPENBLAS_NUM_THREADS or MKL_NUM_THREADS is already set, the launcher sets
all three to the cores of this machine divided by the ranks per machine (at least 1) for every
rank; the rank runner imports NumPy before the program starts, so a program cannot lower them.

The package: command.py (mpiexec, hostfiles, the command line), launcher.py (`main`, the
watchdogs, the exit report), rank.py (the runner inside each rank) and protocol.py (what the
launcher and the ranks agree on).
"""
from __future__ import annotations

from .command import (
    build_command,
    find_mpiexec,
    mpi_flavour,
    parse_hostfile,
    rank_threads,
    split_python,
)
from .launcher import main
from .protocol import LaunchError

__all__ = ["LaunchError", "main", "find_mpiexec", "parse_hostfile", "build_command",
           "mpi_flavour", "rank_threads", "split_python"]
