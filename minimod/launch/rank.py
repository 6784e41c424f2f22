"""One rank of a launched job: run the user's program as `python` would, write heartbeats (this
rank's kvstore progress) for the launcher's stall watchdog, and on any failure print the
traceback, leave a failure record for the launcher and `MPI_Abort` every rank.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import traceback

from .protocol import HOST_ENV, PREFIX, STATE_ENV

_HEARTBEAT_S = 0.25


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


def rank_main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    host = socket.gethostname()
    # heartbeats and failure records go to the launcher's folder, read on its host only
    state_dir = os.environ.get(STATE_ENV) if os.environ.get(HOST_ENV) in (None,
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
    status, error = _run_judged(argv)
    if status:
        sys.stdout.flush()
        sys.stderr.write("%srank %d of %d (pid %d on %s) failed: %s; aborting all ranks\n"
                         % (PREFIX, rank, size, os.getpid(), host, error))
        sys.stderr.flush()
        if state_dir:
            _record_failure(state_dir, {"rank": rank, "pid": os.getpid(), "host": host,
                                        "error": error, "status": status,
                                        "time": time.time()})
        comm.Abort(status)
        return status  # not reached: Abort does not return
    stop.set()
    if beat is not None:
        beat.join()
        record["state"] = "finished"
        _heartbeat(os.path.join(state_dir, "rank-%d.json" % rank), record, stop)
    return 0


def _run_judged(program: list[str]) -> tuple:
    """Run the program; (exit status, what failed or None). A failure's traceback is printed
    here, without the runner's frames."""
    try:
        _run_program(program)
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            return 0, None
        if isinstance(code, int):
            return code, "sys.exit(%d)" % code
        sys.stderr.write("%s\n" % (code,))
        return 1, "sys.exit(%r)" % (code,)
    except KeyboardInterrupt as exc:
        _print_user_traceback(exc)
        return 130, "KeyboardInterrupt"
    except BaseException as exc:  # noqa: BLE001 - every failure must end the whole job
        _print_user_traceback(exc)
        return 1, "%s: %s" % (type(exc).__name__, exc)
    return 0, None


def _record_failure(state_dir: str, failure: dict) -> None:
    """Leave `rank-N.failed` for the launcher, which names the first failed rank."""
    fail = os.path.join(state_dir, "rank-%d.failed" % failure["rank"])
    try:
        with open(fail + ".tmp", "w") as f:
            json.dump(failure, f)
        os.replace(fail + ".tmp", fail)
    except OSError:
        pass
