"""dist_sync on one machine: the batch-128 MLP on 1 process vs 2 processes (same total batch).

    python benchmarks/bench_dist.py [--configs 1x2,1x1,2x1] [--seconds 10] [--batch 128]

Needs an interpreter with the `dist` extra (mpi4py + MPICH), e.g. `.venv/bin/python` after
`pip install -e ".[dist]"`. Each configuration PxT runs P processes of T BLAS threads each:
1x2 is the ordinary single process using both cores of a 2-core machine, 2x1 is two dist_sync
workers (`python -m minimod.launch -n 2`), each on half of every batch of 128 (rows r::2),
with one allreduce of the whole model's gradients (2.7 MB, float32) per step.

Workload (benchmarks/workloads.py): MLP 784-512-512-10, ReLU, SoftmaxOutput, SGD lr 0.01
momentum 0.9, 8 synthetic batches cycled. Timing: warm-up steps, then rounds of K steps (K
chosen on rank 0 so a round lasts ~0.5 s, the same K on every rank), each round between two
barriers; the median round gives samples/s (whole batches of 128 per step, all workers
together). For 2x1 it also reports the time each step spends inside the allreduce (including
waiting for the slower worker) and the time of the same allreduce alone, back to back.

Prints one JSON line per configuration, then a small table. Benchmarks are run by hand on a
quiet machine, never in CI.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchutil  # noqa: E402,F401  (threads and BLAS kernels before numpy; ranks inherit them)


def _args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", default="1x2,1x1,2x1",
                   help="comma-separated PROCESSESxTHREADS (default 1x2,1x1,2x1)")
    p.add_argument("--batch", type=int, default=128, help="total batch per step")
    p.add_argument("--seconds", type=float, default=10.0, help="timed seconds per config")
    p.add_argument("--round-s", type=float, default=0.5, help="seconds per timed round")
    p.add_argument("--warmup-steps", type=int, default=20)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--procs", type=int, default=1, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------- worker

def worker(args) -> None:
    sys.path.insert(0, HERE)
    sys.path.insert(0, ROOT)
    import numpy as np
    import workloads

    import minimod as mx

    if args.procs > 1:
        kv = mx.kv.create("dist_sync")
        rank, n, comm = kv.rank, kv.num_workers, kv._comm
        sync = comm.Barrier
    else:
        kv, rank, n, comm = None, 0, 1, None

        def sync():
            pass
    if args.batch % n:
        raise SystemExit("--batch %d does not split over %d processes" % (args.batch, n))
    per = args.batch // n
    pairs = workloads.numpy_batches("mlp", args.batch)
    batches = [mx.io.DataBatch([mx.nd.array(x[rank::n])], [mx.nd.array(y[rank::n])])
               for x, y in pairs]
    mx.random.seed(workloads.SEED)
    mod = mx.mod.Module(workloads.symbol(mx, "mlp"), context=mx.cpu())
    mod.bind(data_shapes=[("data", (per, 784))], label_shapes=[("softmax_label", (per,))])
    mod.init_params(initializer=workloads.initializer(mx, "mlp"))
    mod.init_optimizer(kvstore=kv if kv is not None else "local", optimizer="sgd",
                       optimizer_params={"learning_rate": workloads.LR,
                                         "momentum": workloads.MOMENTUM})
    state = {"i": 0}

    def step():
        mod.forward_backward(batches[state["i"] % len(batches)])
        mod.update()
        state["i"] += 1

    for _ in range(args.warmup_steps):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(5):
        step()
    per_step = (time.perf_counter() - t0) / 5
    k = max(1, int(round(args.round_s / max(per_step, 1e-6))))
    if comm is not None:
        k = comm.bcast(k, 0)
    rounds = max(3, int(round(args.seconds / args.round_s)))
    ar0 = kv.stats["allreduce_s"] if kv is not None else 0.0
    calls0 = kv.stats["allreduce_calls"] if kv is not None else 0
    times = []
    for _ in range(rounds):
        sync()
        t0 = time.perf_counter()
        for _ in range(k):
            step()
        sync()
        times.append(time.perf_counter() - t0)
    record = {"net": "mlp", "batch": args.batch, "procs": n,
              "threads": int(os.environ.get("BENCH_THREADS", "2")),
              "steps_per_round": k, "rounds": rounds}
    sec = statistics.median(times)
    record["samples_per_s"] = round(args.batch * k / sec, 2)
    record["ms_per_step"] = round(sec / k * 1e3, 4)
    record["ms_min_max"] = [round(min(times) / k * 1e3, 3), round(max(times) / k * 1e3, 3)]
    if kv is not None:
        steps = rounds * k
        in_step = (kv.stats["allreduce_s"] - ar0) / steps
        calls = (kv.stats["allreduce_calls"] - calls0) / steps
        nbytes = kv.stats["allreduce_bytes"] // max(kv.stats["allreduce_calls"], 1)
        buf = np.ones(nbytes // 4, dtype=np.float32)
        from mpi4py import MPI
        sync()
        t0 = time.perf_counter()
        for _ in range(50):
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
        alone = (time.perf_counter() - t0) / 50
        every = comm.gather(in_step, 0) or [in_step]  # None on the other ranks
        record.update(allreduce_ms_per_step=round(1e3 * statistics.mean(every), 4),
                      allreduce_ms_per_step_ranks=[round(1e3 * v, 4) for v in every],
                      allreduce_alone_ms=round(alone * 1e3, 4), allreduces_per_step=calls,
                      allreduce_mb=round(nbytes / 2 ** 20, 3))
    if rank == 0:
        import numpy
        record.update(lib="minimod", kvstore="dist_sync" if kv is not None else "none",
                      numpy=numpy.__version__, time=time.strftime("%Y-%m-%dT%H:%M:%S"))
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


# ---------------------------------------------------------------------------------- driver

def run_config(args, procs: int, threads: int) -> dict:
    limit = int(args.seconds * 3 + 120)
    inner = [__file__, "--worker", "--procs", str(procs), "--batch", str(args.batch),
             "--seconds", str(args.seconds), "--round-s", str(args.round_s),
             "--warmup-steps", str(args.warmup_steps)]
    if procs > 1:
        cmd = [sys.executable, "-m", "minimod.launch", "-n", str(procs), "--timeout",
               str(limit), "--", sys.executable] + inner
    else:
        cmd = [sys.executable] + inner
    # the rank runner imports NumPy before the worker pins its threads: set them here
    env = dict(os.environ, BENCH_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=limit + 30,
                          cwd=ROOT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"procs": procs, "threads": threads, "error": "exit %d: %s" % (
            proc.returncode, (proc.stderr or proc.stdout).strip()[-2000:])}
    return json.loads(lines[-1])


def main(argv=None) -> int:
    args = _args(argv)
    if args.worker:
        worker(args)
        return 0
    rows = []
    for spec in args.configs.split(","):
        procs, threads = (int(v) for v in spec.lower().split("x"))
        row = run_config(args, procs, threads)
        rows.append(row)
        sys.stdout.write(json.dumps(row) + "\n")
        sys.stdout.flush()
    base = next((r for r in rows if r.get("procs") == 1 and "samples_per_s" in r), None)
    print()
    print("| processes x threads | samples/s | ms/step | vs %s | allreduce ms/step "
          "(in step / alone) |" % ("%dx%d" % (base["procs"], base["threads"]) if base else "-"))
    print("|---|---|---|---|---|")
    for r in rows:
        name = "%dx%d" % (r["procs"], r["threads"])
        if "error" in r:
            print("| %s | error: %s | | | |" % (name, r["error"].splitlines()[-1][:80]))
            continue
        ratio = "%.2f" % (r["samples_per_s"] / base["samples_per_s"]) if base else "-"
        ar = ("%.3f / %.3f" % (r["allreduce_ms_per_step"], r["allreduce_alone_ms"])
              if "allreduce_ms_per_step" in r else "-")
        print("| %s | %.1f | %.3f | %s | %s |" % (name, r["samples_per_s"], r["ms_per_step"],
                                                 ratio, ar))
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
