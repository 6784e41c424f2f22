"""Run one workload's peers as concurrent processes that take turns (see benchutil.py, "Lockstep").

    python3 lockstep.py [--rotate K] [--timeout S] [--names A,B,..] [--meta JSON] \
        -- "CMD1 ARGS" "CMD2 ARGS" ...

Each command is split with shlex and started with BENCH_BATON="GO_FD,DONE_FD", the two ends of a
pair of pipes to this process. Every peer imports and builds its model at the same time, then
waits; once all are waiting, the baton goes round-robin (starting with peer K): a peer runs its
warm-up, then one timing window per turn, and hands the baton back. Between two turns this
process waits until the machine is quiet (< 0.3 cores for 50 ms, at most 1 s), so the BLAS and
OpenMP threads that the previous holder leaves spinning do not land in the next one's window.

Each peer's JSON line (its stdout lines starting with "{") is printed on stdout in the order
given; a peer that ends without one gets an error line instead: {"lib": its --names entry,
"error": ...} plus the fields of --meta (run_all.sh passes net, batch, mode and round).
Stderr goes to this process's stderr. Exits 0 whenever it could start the peers.
"""
from __future__ import annotations

import argparse
import json
import os
import selectors
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchutil  # noqa: E402


class Peer:
    def __init__(self, index: int, command: str):
        self.index = index
        self.command = command
        go_r, self.go_w = os.pipe()
        self.done_r, done_w = os.pipe()
        env = dict(os.environ, BENCH_BATON="%d,%d" % (go_r, done_w))
        self.proc = subprocess.Popen(shlex.split(command), stdout=subprocess.PIPE, env=env,
                                     pass_fds=(go_r, done_w), text=True)
        os.close(go_r)
        os.close(done_w)
        self.waiting = False  # has said b"w" and not yet been handed the baton
        self.finished = False  # said b"x", or its pipe closed

    def read_message(self, timeout: float):
        """The peer's next byte (b"w", b"r", b"x"), b"" when it went away, None on timeout."""
        sel = selectors.DefaultSelector()
        sel.register(self.done_r, selectors.EVENT_READ)
        ready = sel.select(timeout)
        sel.close()
        if not ready:
            return None
        return os.read(self.done_r, 1)

    def note(self, msg: bytes) -> None:
        if msg == b"w":
            self.waiting = True
        elif msg in (b"x", b""):
            self.finished = True

    def give_baton(self) -> None:
        self.waiting = False
        os.write(self.go_w, b"g")


def next_message(p: Peer, timeout: float, doing: str) -> bytes:
    """`p`'s next message, noted; after `timeout` s without one the peer is killed (b"")."""
    msg = p.read_message(timeout)
    if msg is None:
        sys.stderr.write("lockstep: peer %d %s for over %.0f s, killed: %s\n"
                         % (p.index, doing, timeout, p.command))
        p.proc.kill()
        msg = b""
    p.note(msg)
    return msg


def wait_all_waiting(peers, timeout: float) -> None:
    """Block until every live peer has asked for the baton (it imported and built its model)."""
    deadline = time.perf_counter() + timeout
    for p in peers:
        while not p.waiting and not p.finished:
            next_message(p, max(deadline - time.perf_counter(), 0.0), "was not ready")


def one_turn(p: Peer, timeout: float) -> None:
    """Hand `p` the baton and wait until it gives it back and asks again, or finishes."""
    p.give_baton()
    while next_message(p, timeout, "held the baton") not in (b"w", b"x", b""):
        pass  # b"r": it gave the baton back; its b"w" (or b"x") follows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rotate", type=int, default=0, help="peer that gets the first turn")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds a peer may take to get ready, or hold the baton")
    parser.add_argument("--names", default="", help="comma-separated peer names for error lines")
    parser.add_argument("--meta", default="{}", help="JSON object merged into error lines")
    parser.add_argument("commands", nargs="+")
    args = parser.parse_args()
    commands = [c for c in args.commands if c != "--"]
    peers = [Peer(i, c) for i, c in enumerate(commands)]
    outputs = [None] * len(peers)
    try:
        wait_all_waiting(peers, args.timeout)
        turn = args.rotate % len(peers)
        # every live peer is waiting here: each turn ends once its b"w" (or end) is read
        while not all(p.finished for p in peers):
            p = peers[turn % len(peers)]
            turn += 1
            if p.finished:
                continue
            benchutil.wait_quiet(cores=0.3, hold_s=0.05, max_s=1.0, tick_s=0.025)
            one_turn(p, args.timeout)
    finally:
        for i, p in enumerate(peers):
            out, _ = p.proc.communicate()
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            outputs[i] = lines[-1] if lines else None
            if outputs[i] is None:
                names = args.names.split(",") if args.names else []
                err = {"lib": names[i] if i < len(names) else p.command}
                err.update(json.loads(args.meta))
                err["error"] = "no result (exit status %s)" % p.proc.returncode
                outputs[i] = json.dumps(err)
    for line in outputs:
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
