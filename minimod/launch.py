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
a range a firewall lets through; `--iface IF` picks the network interface. See README.md.

BLAS threads: ranks sharing a machine also share its cores, and BLAS pools that each take every
core oversubscribe them (two 2-thread ranks on 2 cores ran an MLP step 5x slower than one rank).
Unless OMP_NUM_THREADS, OPENBLAS_NUM_THREADS or MKL_NUM_THREADS is already set, the launcher sets
all three to the cores of this machine divided by the ranks per machine (at least 1) for every
rank; the rank runner imports NumPy before the program starts, so a program cannot lower them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

from .base import MXNetError

__all__ = ["LaunchError", "main", "find_mpiexec", "parse_hostfile", "build_command"]

_PREFIX = "minimod.launch: "
_RANK_FLAG = "--_rank"
_STATE_ENV = "MINIMOD_LAUNCH_DIR"
_HOST_ENV = "MINIMOD_LAUNCH_HOST"
_HEARTBEAT_S = 0.25
_GRACE_S = 3.0


class LaunchError(MXNetError):
    """Bad launcher arguments, a bad hostfile, or no mpiexec to be found."""


# ---------------------------------------------------------------------------------- set-up

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


def build_command(mpiexec: str, flavour: str, n: int, command: list[str],
                  hostfile: str | None = None, ports: tuple | None = None,
                  iface: str | None = None, env_names: tuple = ()) -> list[str]:
    """The mpiexec command line for `command` on `n` ranks."""
    cmd = [mpiexec, "-n", str(n)]
    if flavour == "openmpi":
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
    return cmd + interp + ["-m", "minimod.launch", _RANK_FLAG, "--"] + program


# ---------------------------------------------------------------------------------- launcher

def _read_states(directory: str) -> dict:
    states = {}
    try:
        names = os.listdir(directory)
    except OSError:
        return states
    for name in names:
        if name.startswith("rank-") and name.endswith(".json"):
            try:
                with open(os.path.join(directory, name)) as f:
                    state = json.load(f)
                states[int(state["rank"])] = state
            except (OSError, ValueError, KeyError):
                continue  # being replaced right now; the next look will have it
    return states


def _describe_ranks(states: dict, n: int, now: float) -> list[str]:
    lines = []
    waiting_in = [s["progress"]["count"] for s in states.values()
                  if s.get("progress") and s["progress"].get("entered")]
    target = max(waiting_in) if waiting_in else None
    for rank in range(n):
        s = states.get(rank)
        if s is None:
            lines.append("  rank %d: no report (not started yet, or on another host)" % rank)
            continue
        where = "pid %s on %s" % (s.get("pid"), s.get("host"))
        p = s.get("progress")
        if s.get("state") == "finished":
            what = "finished"
        elif not p or not p.get("count"):
            what = "running, has not reached any kvstore collective"
        elif p.get("entered"):
            what = "waiting in kvstore collective #%d (%s) for %.1f s" % (
                p["count"], p["op"], now - p["entered"])
        else:
            what = "computing since kvstore collective #%d (%s) ended %.1f s ago" % (
                p["count"], p["op"], now - p["done"])
        stalled = (target is not None and s.get("state") != "finished"
                   and not (p and p.get("entered") and p.get("count") == target))
        lines.append("  rank %d (%s): %s%s" % (rank, where, what,
                                              "   <- stalled?" if stalled else ""))
    return lines


def _last_progress(states: dict, started: float) -> float:
    done = [s["progress"]["done"] for s in states.values()
            if s.get("progress") and s["progress"].get("done")]
    return max(done + [started])


def _end_job(proc: subprocess.Popen, states: dict) -> None:
    """SIGTERM mpiexec's process group (mpiexec passes it on to remote hosts), then SIGKILL
    whatever is left of it and of the local ranks."""
    pids = [int(s["pid"]) for s in states.values()
            if s.get("pid") and s.get("host") == socket.gethostname()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        if sig == signal.SIGTERM:
            try:
                proc.wait(timeout=_GRACE_S)
            except subprocess.TimeoutExpired:
                continue
            time.sleep(0.2)  # let the ranks' own exits land before the SIGKILL sweep
    try:
        proc.wait(timeout=_GRACE_S)
    except subprocess.TimeoutExpired:
        pass


def _say(msg: str) -> None:
    sys.stderr.write(_PREFIX + msg + "\n")
    sys.stderr.flush()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m minimod.launch",
        description="Run COMMAND on N MPI ranks (dist_sync training) and watch them.",
        usage="python -m minimod.launch -n N [--hostfile FILE] [--timeout S] "
              "[--stall-timeout S] [--port-range LO:HI] [--iface IF] [--mpiexec PATH] "
              "-- COMMAND ...")
    p.add_argument("-n", "--num-workers", dest="n", type=int, required=True,
                   help="number of ranks (worker processes)")
    p.add_argument("--hostfile", help="hosts to run on: 'host', 'host:SLOTS' or "
                   "'host slots=SLOTS' per line (default: this machine only)")
    p.add_argument("--timeout", type=float, default=None,
                   help="end the whole job after S seconds")
    p.add_argument("--stall-timeout", type=float, default=None,
                   help="end the job when no rank finishes a kvstore collective for S seconds")
    p.add_argument("--port-range", default=None, help="TCP ports MPI may use, LO:HI")
    p.add_argument("--iface", default=None, help="network interface MPI uses between hosts")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [_RANK_FLAG]:
        return _rank_main(argv[1:])
    if "--" in argv:
        cut = argv.index("--")
        own, command = argv[:cut], argv[cut + 1:]
    else:
        own, command = argv, []
    parser = _parser()
    args = parser.parse_args(own)
    try:
        if args.n < 1:
            raise LaunchError("-n must be at least 1, got %d" % args.n)
        for name in ("timeout", "stall_timeout"):
            value = getattr(args, name)
            if value is not None and value <= 0:
                raise LaunchError("--%s must be positive, got %s"
                                  % (name.replace("_", "-"), value))
        if not command:
            raise LaunchError("no COMMAND: put it after `--`, e.g. "
                              "python -m minimod.launch -n 2 -- python train.py")
        ports = _parse_ports(args.port_range) if args.port_range else None
        hosts = parse_hostfile(args.hostfile) if args.hostfile else None
        split_python(command)  # a Python COMMAND that runs nothing is refused here
        mpiexec = find_mpiexec(args.mpiexec)
    except LaunchError as err:
        parser.print_usage(sys.stderr)
        _say("error: %s" % err)
        return 2
    flavour = mpi_flavour(mpiexec)
    state_dir = tempfile.mkdtemp(prefix="minimod-launch-")
    try:
        env = dict(os.environ)
        env[_STATE_ENV] = state_dir
        env[_HOST_ENV] = socket.gethostname()
        env_names = [_STATE_ENV, _HOST_ENV]
        if not any(os.environ.get(name) for name in _THREAD_VARS):
            threads = str(rank_threads(args.n, hosts))
            env.update({name: threads for name in _THREAD_VARS})
            env_names += list(_THREAD_VARS)
        if ports:
            lo, hi = ports
            extra = {"MPIEXEC_PORT_RANGE": "%d:%d" % (lo, hi),
                     "MPIR_CVAR_CH3_PORT_RANGE": "%d:%d" % (lo, hi),
                     "FI_TCP_PORT_LOW_RANGE": str(lo), "FI_TCP_PORT_HIGH_RANGE": str(hi)}
            env.update(extra)
            env_names += list(extra)
        if args.iface:
            env["FI_TCP_IFACE"] = args.iface
            env_names.append("FI_TCP_IFACE")
        hostfile = _write_hostfile(hosts, flavour, state_dir) if hosts else None
        cmd = build_command(mpiexec, flavour, args.n, command, hostfile, ports, args.iface,
                            tuple(env_names))
        return _watch(cmd, env, args, state_dir)
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


class _Terminated(Exception):
    pass


def _on_sigterm(signum, frame):
    raise _Terminated()


def _watch(cmd: list[str], env: dict, args, state_dir: str) -> int:
    started = time.time()
    # mpiexec gets a process group (session) of its own, so the watchdog can kill it whole;
    # SIGTERM or Ctrl-C to the launcher end the job the same way.
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    reason, warned = None, False
    try:
        while True:
            try:
                proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.time()
            if args.timeout is not None and now - started > args.timeout:
                reason = "the job ran for %.1f s, past --timeout %g" % (now - started,
                                                                       args.timeout)
            elif args.stall_timeout is not None:
                states = _read_states(state_dir)
                idle = now - _last_progress(states, started)
                if idle > args.stall_timeout and states:
                    reason = ("no rank finished a kvstore collective for %.1f s, past "
                              "--stall-timeout %g" % (idle, args.stall_timeout))
                elif idle > args.stall_timeout and not warned:
                    warned = True  # the heartbeats come from ranks on this host only
                    _say("--stall-timeout: no rank on this host reports progress, so the "
                         "stall watchdog is off (use --timeout for ranks on other hosts)")
            if reason:
                break
    except KeyboardInterrupt:
        reason = "interrupted"
    except _Terminated:
        reason = "the launcher got SIGTERM"
    try:
        if reason is None:
            return _report_exit(proc.returncode, state_dir, args.n)
        states = _read_states(state_dir)
        lines = _describe_ranks(states, args.n, time.time())
        _say("%s; ending all %d ranks (killing the process group of mpiexec)"
             % (reason, args.n))
        for line in lines:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        _end_job(proc, states)
        return 124 if "timeout" in reason else 130 if reason == "interrupted" else 143
    finally:
        signal.signal(signal.SIGTERM, previous)


def _report_exit(code: int, state_dir: str, n: int) -> int:
    failures = []
    for name in sorted(os.listdir(state_dir)) if os.path.isdir(state_dir) else []:
        if name.startswith("rank-") and name.endswith(".failed"):
            try:
                with open(os.path.join(state_dir, name)) as f:
                    failures.append(json.load(f))
            except (OSError, ValueError):
                continue
    if failures:
        failures.sort(key=lambda f: f.get("time", 0))
        first = failures[0]
        others = ", ".join(str(f["rank"]) for f in failures[1:])
        _say("rank %d of %d (pid %s on %s) failed: %s; MPI_Abort ended every rank%s "
             "(its traceback is above)"
             % (first["rank"], n, first.get("pid"), first.get("host"), first["error"],
                "; ranks %s failed too" % others if others else ""))
        return int(first.get("status") or 1) or 1
    if code != 0:
        how = ("was killed by signal %d" % -code) if code < 0 else "exited with status %d" % code
        _say("the job failed: mpiexec %s (a rank died outside Python, was killed, or a "
             "rank on another host failed; see the output above)" % how)
        return code if code > 0 else 128 - code
    return 0


# ---------------------------------------------------------------------------------- ranks

def _heartbeat(path: str, record: dict, stop: threading.Event) -> None:
    """Write this rank's state (and its kvstore progress) to `path` a few times a second."""
    tmp = path + ".tmp"
    while True:
        dist = sys.modules.get("minimod.kvstore.dist")
        record["progress"] = dist.PROGRESS.snapshot() if dist is not None else None
        record["time"] = time.time()
        try:
            with open(tmp, "w") as f:
                json.dump(record, f)
            os.replace(tmp, path)
        except OSError:
            pass
        if stop.wait(_HEARTBEAT_S):
            return


def _run_program(program: list[str]) -> None:
    """Run `script.py args`, `-m module args` or `-c code args` as `python` would."""
    import runpy
    if program[0] == "-c":
        sys.argv[:] = ["-c"] + program[2:]
        code = compile(program[1], "<string>", "exec")
        namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        exec(code, namespace)
    elif program[0] == "-m":
        sys.argv[:] = program[1:]
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv[:] = list(program)
        sys.path[0] = os.path.dirname(os.path.realpath(program[0]))
        runpy.run_path(program[0], run_name="__main__")


def _print_user_traceback(exc: BaseException) -> None:
    """The traceback of `exc` without the runner's own frames (this file and runpy)."""
    tb = exc.__traceback__
    while tb is not None and (tb.tb_frame.f_code.co_filename in (__file__, "<frozen runpy>")
                              or tb.tb_frame.f_code.co_filename.endswith("runpy.py")):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


def _rank_main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    host = socket.gethostname()
    # heartbeats and failure records go to the launcher's folder, read on its host only
    state_dir = os.environ.get(_STATE_ENV) if os.environ.get(_HOST_ENV) in (None,
                                                                           host) else None
    record = {"rank": rank, "size": size, "pid": os.getpid(), "host": host,
              "state": "running"}
    stop = threading.Event()
    beat = None
    if state_dir:
        os.makedirs(state_dir, exist_ok=True)
        path = os.path.join(state_dir, "rank-%d.json" % rank)
        beat = threading.Thread(target=_heartbeat, args=(path, record, stop), daemon=True,
                                name="minimod-heartbeat")
        beat.start()
    status, error = 0, None
    try:
        _run_program(argv)
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            status = 0
        elif isinstance(code, int):
            status, error = code, "sys.exit(%d)" % code
        else:
            sys.stderr.write("%s\n" % (code,))
            status, error = 1, "sys.exit(%r)" % (code,)
    except KeyboardInterrupt as exc:
        status, error = 130, "KeyboardInterrupt"
        _print_user_traceback(exc)
    except BaseException as exc:  # noqa: BLE001 - every failure must end the whole job
        status = 1
        error = "%s: %s" % (type(exc).__name__, exc)
        _print_user_traceback(exc)
    if status:
        sys.stdout.flush()
        sys.stderr.write("%srank %d of %d (pid %d on %s) failed: %s; aborting all ranks\n"
                         % (_PREFIX, rank, size, os.getpid(), host, error))
        sys.stderr.flush()
        if state_dir:
            fail = os.path.join(state_dir, "rank-%d.failed" % rank)
            try:
                with open(fail + ".tmp", "w") as f:
                    json.dump({"rank": rank, "pid": os.getpid(), "host": host,
                               "error": error, "status": status, "time": time.time()}, f)
                os.replace(fail + ".tmp", fail)
            except OSError:
                pass
        comm.Abort(status)
        return status  # not reached: Abort does not return
    stop.set()
    if beat is not None:
        beat.join()
        record["state"] = "finished"
        _heartbeat(os.path.join(state_dir, "rank-%d.json" % rank), record, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
