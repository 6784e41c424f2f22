"""The launcher: parse the arguments, start mpiexec in a process group of its own, watch the
ranks' heartbeats against `--timeout` and `--stall-timeout`, end the whole job when one trips,
and report which rank failed and how.
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
import time

from .command import (
    _THREAD_VARS,
    _parse_ports,
    _write_hostfile,
    build_command,
    find_mpiexec,
    mpi_flavour,
    parse_hostfile,
    rank_threads,
    split_python,
)
from .protocol import HOST_ENV, PREFIX, RANK_FLAG, STATE_ENV, LaunchError
from .rank import rank_main

_GRACE_S = 3.0


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
    sys.stderr.write(PREFIX + msg + "\n")
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
    if argv[:1] == [RANK_FLAG]:
        return rank_main(argv[1:])
    if "--" in argv:
        cut = argv.index("--")
        own, command = argv[:cut], argv[cut + 1:]
    else:
        own, command = argv, []
    parser = _parser()
    args = parser.parse_args(own)
    try:
        ports, hosts, mpiexec = _check_arguments(args, command)
    except LaunchError as err:
        parser.print_usage(sys.stderr)
        _say("error: %s" % err)
        return 2
    flavour = mpi_flavour(mpiexec)
    state_dir = tempfile.mkdtemp(prefix="minimod-launch-")
    try:
        env, env_names = _rank_environment(args, hosts, ports, state_dir)
        hostfile = _write_hostfile(hosts, flavour, state_dir) if hosts else None
        cmd = build_command(mpiexec, flavour, args.n, command, hostfile, ports, args.iface,
                            tuple(env_names))
        return _watch(cmd, env, args, state_dir)
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def _check_arguments(args, command: list[str]) -> tuple:
    """(ports, hosts, mpiexec) for valid arguments; LaunchError saying what is wrong."""
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
    return ports, hosts, find_mpiexec(args.mpiexec)


def _rank_environment(args, hosts, ports, state_dir: str) -> tuple:
    """(environment, names of the variables mpiexec must pass on to every rank)."""
    env = dict(os.environ)
    env[STATE_ENV] = state_dir
    env[HOST_ENV] = socket.gethostname()
    env_names = [STATE_ENV, HOST_ENV]
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
    return env, env_names


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
            reason, warned = _watchdogs(args, state_dir, started, warned)
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


def _watchdogs(args, state_dir: str, started: float, warned: bool) -> tuple:
    """(why the job must end now or None, whether the no-heartbeat warning was given)."""
    now = time.time()
    if args.timeout is not None and now - started > args.timeout:
        return ("the job ran for %.1f s, past --timeout %g" % (now - started, args.timeout),
                warned)
    if args.stall_timeout is None:
        return None, warned
    states = _read_states(state_dir)
    idle = now - _last_progress(states, started)
    if idle > args.stall_timeout and states:
        return ("no rank finished a kvstore collective for %.1f s, past --stall-timeout %g"
                % (idle, args.stall_timeout), warned)
    if idle > args.stall_timeout and not warned:
        warned = True  # the heartbeats come from ranks on this host only
        _say("--stall-timeout: no rank on this host reports progress, so the stall "
             "watchdog is off (use --timeout for ranks on other hosts)")
    return None, warned


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
