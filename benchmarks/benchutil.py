"""Shared timing machinery for the benchmark scripts (stdlib only, works under any venv).

Import this module BEFORE numpy, torch or mxnet: importing it pins the BLAS/OpenMP thread pools
to BENCH_THREADS (default 2, the size of the benchmark machine) through the environment, and
gives every library the kernels of this CPU's instruction set, as oneDNN and MKL pick theirs
from the CPU's feature flags: OPENBLAS_CORETYPE (read by OpenBLAS when it loads: NumPy's, and
MXNet's for the operators oneDNN does not cover) is set from the flags, SKYLAKEX where the CPU
has the AVX-512 subsets those kernels use, HASWELL where it has AVX2 and FMA, and left to
OpenBLAS's own detection otherwise. This overrides a value inherited from the environment:
this machine's environment pins Haswell (AVX2), which holds NumPy's GEMMs to about 0.55x of
the AVX-512 rate MXNet's oneDNN and PyTorch use here, and OpenBLAS's own detection is no
better for MXNet's older OpenBLAS (it takes this EPYC for a 2007 "Barcelona"). Set
BENCH_OPENBLAS_CORETYPE=keep to keep the environment's value, =auto for OpenBLAS's detection,
or =NAME for one table. `openblas_core()` names the table a run used (every JSON line has it).

What `WindowTimer` (driven by `measure()`, or by Module.fit's batch_end_callback) does:
  * warm-up: runs the step for at least `warmup_s` seconds (and 3 steps), synced;
  * calibration: picks `steps_per_window` so one window lasts about `window_s` (0.4 s), and
    re-aims it after every window from the median step time so far;
  * windows: each window is `steps_per_window` steps followed by one sync (mx.nd.waitall for
    MXNet, a no-op for synchronous libraries). For every window it also reads /proc/stat and
    this process's own CPU time, and computes the CPU that OTHER processes used during the
    window, in cores. A window is "quiet" when that is below `quiet_cores` (0.15);
  * it stops once it has `want_quiet` (7) quiet windows or after `max_s` (30 s). The result
    is the median over the quiet windows; with fewer than 3 quiet windows the run is marked
    noisy and the median over all windows is reported instead.

Lockstep (BENCH_BATON set by lockstep.py): the peers of one workload run as concurrent
processes that take turns. A process runs only while it holds the baton, which `lockstep.py`
passes round-robin: one hold for warm-up and calibration, then one hold per window; a waiting
process sleeps in a blocking read and uses no CPU. So the peers' windows alternate about every
0.4 s, and their ratios compare the machine in the same seconds rather than minutes apart
(this machine changes speed by about 2x for minutes at a time). `max_s` then counts only the
time a process held the baton.

`python3 benchutil.py wait-quiet [CORES] [HOLD_S] [MAX_S]` blocks until the whole machine has used
less than CORES cores for HOLD_S seconds in a row (run_all.sh calls it before every run).
"""
from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time

THREADS = int(os.environ.get("BENCH_THREADS", "2"))
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(THREADS)
# MXNet's default: one engine worker; each operator uses the OpenMP pool above.
os.environ.setdefault("MXNET_CPU_WORKER_NTHREADS", "1")


def _coretype_from_cpu_flags():
    """SKYLAKEX, HASWELL or None (let OpenBLAS detect) from /proc/cpuinfo's flags."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((set(ln.split(":", 1)[1].split()) for ln in f
                          if ln.startswith("flags")), set())
    except OSError:
        return None
    if {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "SKYLAKEX"
    if {"avx2", "fma"} <= flags:
        return "HASWELL"
    return None


INHERITED_CORETYPE = os.environ.get("OPENBLAS_CORETYPE")
CORETYPE = os.environ.get("BENCH_OPENBLAS_CORETYPE", "cpu")
_core = _coretype_from_cpu_flags() if CORETYPE == "cpu" else CORETYPE
if _core in (None, "auto"):
    os.environ.pop("OPENBLAS_CORETYPE", None)
elif _core != "keep":
    os.environ["OPENBLAS_CORETYPE"] = _core

_CORENAME_FUNCS = ("openblas_get_corename", "scipy_openblas_get_corename64_",
                   "scipy_openblas_get_corename", "openblas_get_corename64_")


def openblas_core():
    """The kernel table ('SkylakeX', 'Haswell', ...) of the OpenBLAS this process loaded, or
    None (another BLAS, or OpenBLAS linked in without its symbols exported)."""
    import ctypes
    candidates = [None]  # symbols of the main program and what it linked
    try:
        with open("/proc/self/maps") as maps:
            candidates += sorted({line.split()[-1] for line in maps
                                  if line.rstrip().endswith(".so") or ".so." in line
                                  if "blas" in line.lower() or "mxnet" in line.lower()})
    except OSError:
        pass
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _CORENAME_FUNCS:
            func = getattr(lib, name, None)
            if func is not None:
                func.restype = ctypes.c_char_p
                value = func()
                return value.decode(errors="replace") if value else None
    return None

_HZ = os.sysconf("SC_CLK_TCK")


def _machine_busy_s() -> float:
    """CPU seconds spent by the whole machine so far (user+nice+system+irq+softirq).

    iowait, idle, steal and the guest columns (already inside user/nice) are left out.
    """
    with open("/proc/stat") as f:
        fields = f.readline().split()
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[1:8])
    return (user + nice + system + irq + softirq) / _HZ


def _own_cpu_s() -> float:
    """CPU seconds used by this process, all its threads (BLAS/OpenMP workers included)."""
    t = os.times()
    return t.user + t.system


class CpuProbe:
    """CPU that the other processes of the machine use between start() and stop(), in cores."""

    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._busy0 = _machine_busy_s()
        self._own0 = _own_cpu_s()

    def stop(self) -> tuple:
        """(wall seconds, other processes' cores, this process's cores)."""
        wall = time.perf_counter() - self._t0
        busy = _machine_busy_s() - self._busy0
        own = _own_cpu_s() - self._own0
        wall_c = max(wall, 1e-9)
        return wall, max(busy - own, 0.0) / wall_c, own / wall_c


def peak_rss_mb() -> float:
    """Peak resident set size of this process (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class Baton:
    """This process's end of lockstep.py's baton (BENCH_BATON="GO_FD,DONE_FD"), or a no-op.

    `acquire()` tells the coordinator this process is waiting (b"w" on DONE_FD) and blocks
    until it is handed the baton (a byte on GO_FD); `release()` hands it back (b"r"); `finish()`
    says this process needs no more turns (b"x"). Without BENCH_BATON all three do nothing.
    """

    def __init__(self, spec=None):
        spec = os.environ.get("BENCH_BATON", "") if spec is None else spec
        self.active = bool(spec)
        self.held = False
        if self.active:
            self._go, self._done = (int(fd) for fd in spec.split(","))

    def acquire(self) -> None:
        if self.active and not self.held:
            os.write(self._done, b"w")
            if not os.read(self._go, 1):
                raise RuntimeError("lockstep coordinator went away (BENCH_BATON pipe closed)")
            self.held = True

    def release(self) -> None:
        if self.active and self.held:
            os.write(self._done, b"r")
            self.held = False

    def finish(self) -> None:
        if self.active:
            os.write(self._done, b"x")
            self.active = self.held = False


class StopBenchmark(Exception):
    """Raised by `WindowTimer.tick` (when `raise_when_done`) to leave a loop it doesn't own."""


class WindowTimer:
    """Warm-up, calibration and quiet-window timing, driven by one `tick()` per finished step.

    The loop that runs the steps can belong to someone else (`Module.fit` calls `tick` from a
    batch_end_callback); see the module docstring for what is measured.
    """

    def __init__(self, sync, samples_per_step: int, window_s: float = 0.4,
                 warmup_s: float = 1.0, want_quiet: int = 7, quiet_cores: float = 0.15,
                 max_s: float = 30.0, min_warmup_steps: int = 3, raise_when_done: bool = False):
        self.sync = sync
        self.samples_per_step = samples_per_step
        self.window_s = window_s
        self.warmup_s = warmup_s
        self.want_quiet = want_quiet
        self.quiet_cores = quiet_cores
        self.max_s = max_s
        self.min_warmup_steps = min_warmup_steps
        self.raise_when_done = raise_when_done
        self.phase = "warmup"
        self.done = False
        self.n = 0
        self.t0 = time.perf_counter()
        self.steps_per_window = 0
        self.windows = []  # (seconds per step, other processes' cores, own cores)
        self.probe = CpuProbe()
        self.timed_s = 0.0  # wall time of the windows so far (lockstep: excludes the waits)
        self.baton = Baton()
        self.baton.acquire()  # lockstep: warm-up and calibration are this process's first turn
        self.t0 = time.perf_counter()

    def tick(self) -> None:
        self.n += 1
        now = time.perf_counter()
        if self.phase == "warmup":
            if self.n % 4 == 0:
                self.sync()
            if self.n >= self.min_warmup_steps and now - self.t0 >= self.warmup_s:
                self.sync()
                self.phase, self.n, self.t0 = "calibrate", 0, time.perf_counter()
        elif self.phase == "calibrate":
            if self.n >= 2 and now - self.t0 >= min(0.2, self.window_s / 2):
                self.sync()
                per_step = (time.perf_counter() - self.t0) / self.n
                self.steps_per_window = max(1, int(round(self.window_s / max(per_step, 1e-6))))
                self.phase, self.n = "windows", 0
                self._next_window()
        elif self.phase == "windows" and self.n >= self.steps_per_window:
            self.sync()
            wall, others, own = self.probe.stop()
            self.windows.append((wall / self.n, others, own))
            self.timed_s += wall
            quiet = sum(1 for w in self.windows if w[1] < self.quiet_cores)
            if quiet >= self.want_quiet or self.timed_s > self.max_s:
                self.done = True
                self.baton.release()
                self.baton.finish()
                if self.raise_when_done:
                    raise StopBenchmark()
                return
            # Re-aim the window length at window_s from the median step time so far (the
            # calibration can fall on a slow moment of this machine).
            per_step = statistics.median(w[0] for w in self.windows)
            self.steps_per_window = max(1, int(round(self.window_s / max(per_step, 1e-6))))
            self.n = 0
            self._next_window()

    def _next_window(self) -> None:
        """Start timing a window; in lockstep first give the baton back and wait for a turn."""
        self.baton.release()
        self.baton.acquire()
        self.probe.start()

    def result(self) -> dict:
        quiet = [w for w in self.windows if w[1] < self.quiet_cores]
        noisy = len(quiet) < 3
        use = self.windows if noisy else quiet
        sec = statistics.median(w[0] for w in use)
        return {
            "samples_per_s": self.samples_per_step / sec,
            "ms_per_step": sec * 1e3,
            "quiet_windows": len(quiet),
            "windows": len(self.windows),
            "noisy": noisy,
            "others_cores": round(statistics.median(w[1] for w in self.windows), 3),
            "own_cores": round(statistics.median(w[2] for w in use), 3),
            "steps_per_window": self.steps_per_window,
            "ms_min_max": [round(min(w[0] for w in use) * 1e3, 3),
                           round(max(w[0] for w in use) * 1e3, 3)],
        }


def timer_from_args(args, sync, samples_per_step: int, **kw) -> WindowTimer:
    return WindowTimer(sync, samples_per_step, window_s=args.window, warmup_s=args.warmup,
                       want_quiet=args.quiet_windows, quiet_cores=args.quiet_cores,
                       max_s=args.max_s, **kw)


def measure(step, timer: WindowTimer) -> dict:
    """Run `step()` until `timer` has its windows; returns `timer.result()`."""
    while not timer.done:
        step()
        timer.tick()
    return timer.result()


def add_common_args(parser) -> None:
    parser.add_argument("--net", required=True, choices=["mlp", "lenet", "lstm", "lstm_fused",
                                                          "sdnet", "w2v_nce", "lstm_nce"])
    parser.add_argument("--batch", type=int, default=None,
                        help="default: 128 (mlp, sdnet), 64 (lenet), 256 (w2v_nce), 32 (lstm, "
                             "lstm_fused, lstm_nce)")
    parser.add_argument("--mode", default="module", choices=["module", "fit", "infer"],
                        help="module: training steps through Module (PyTorch: a plain loop); "
                             "fit: Module.fit over an NDArrayIter (MXNet-API libs, mlp only); "
                             "infer: forward only, inference mode")
    parser.add_argument("--window", type=float, default=float(os.environ.get("BENCH_WINDOW",
                                                                              "0.4")))
    parser.add_argument("--warmup", type=float, default=float(os.environ.get("BENCH_WARMUP",
                                                                              "1.0")))
    parser.add_argument("--quiet-windows", type=int,
                        default=int(os.environ.get("BENCH_QUIET_WINDOWS", "7")))
    parser.add_argument("--max-s", type=float, default=float(os.environ.get("BENCH_MAX_S",
                                                                             "30")))
    parser.add_argument("--quiet-cores", type=float, default=0.15)


def default_batch(net: str) -> int:
    return {"mlp": 128, "lenet": 64, "lstm": 32, "lstm_fused": 32, "sdnet": 128,
            "w2v_nce": 256, "lstm_nce": 32}[net]


def emit(lib: str, args, result: dict, **extra) -> None:
    """Print the run's one JSON line on stdout."""
    record = {"lib": lib, "net": args.net, "batch": args.batch, "mode": args.mode}
    record.update(result)
    record["samples_per_s"] = round(record["samples_per_s"], 2)
    record["ms_per_step"] = round(record["ms_per_step"], 4)
    record["peak_rss_mb"] = round(peak_rss_mb(), 1)
    record["threads"] = THREADS
    record["round"] = int(os.environ.get("BENCH_ROUND", "0"))
    record["time"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    record["openblas_core"] = openblas_core()
    record["lockstep"] = bool(os.environ.get("BENCH_BATON"))  # run under lockstep.py
    record.update(extra)
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def wait_quiet(cores: float = 0.25, hold_s: float = 2.0, max_s: float = 120.0,
               tick_s: float = 0.25) -> bool:
    """Block until the machine used < `cores` cores for `hold_s` s in a row; False on timeout."""
    deadline = time.perf_counter() + max_s
    quiet_since = None
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        b0 = _machine_busy_s()
        time.sleep(tick_s)
        used = (_machine_busy_s() - b0) / (time.perf_counter() - t0)
        now = time.perf_counter()
        if used < cores:
            quiet_since = now if quiet_since is None else quiet_since
            if now - quiet_since >= hold_s:
                return True
        else:
            quiet_since = None
    return False


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "wait-quiet":
        vals = [float(x) for x in sys.argv[2:5]]
        ok = wait_quiet(*vals)
        if not ok:
            sys.stderr.write("wait-quiet: machine still busy, going on anyway\n")
        sys.exit(0)
    sys.stderr.write(__doc__)
    sys.exit(2)
