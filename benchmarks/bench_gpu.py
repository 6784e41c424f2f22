"""GPU benchmark: minimod with context=mx.gpu(0) (CuPy), with its steps replayed as CUDA graphs
(the default) and eager (MINIMOD_CUDA_GRAPHS=0), against PyTorch CUDA, eager and with the
step captured as a CUDA graph, one training step (forward + backward + SGD-momentum update) of
the MLP (batch 128), LeNet (batch 64) and LSTM language-model (batch 32) workloads, with each
library's summed GPU kernel time per step beside its step time (the gap is launch and host
cost).

    python benchmarks/bench_gpu.py                                # every net, both libraries
    python benchmarks/bench_gpu.py --results benchmarks/RESULTS.md   # also append the table
    python benchmarks/bench_gpu.py --nets mlp --libs minimod
    python benchmarks/bench_gpu.py --one minimod --net lenet      # one run, one JSON line

The networks, data, initialisation and optimizer are those of workloads.py (the CPU
benchmarks' builders, `make_module(..., context=mx.gpu(0))` and bench_torch.py's `build`); the
8 batches sit on the GPU before timing, as a prefetching loader would leave them. Each (library,
net) pair runs in its own process (`--one`), so the libraries never share a GPU memory pool.
The timer is benchutil's WindowTimer: warm-up, then windows of about 0.4 s each closed by a
device synchronisation (`mx.nd.waitall()`, i.e. cudaDeviceSynchronize on every GPU, /
`torch.cuda.synchronize()`), so the queued GPU work is counted; the figure is the median step
time over at least 5 windows (7 quiet ones by default).

The driver prints each run's JSON line as it comes, then a Markdown table naming the GPU (CUDA's
device name); `--results PATH` appends that table to PATH. A library that cannot run (PyTorch not
installed, or a CPU-only build) gets a row saying why. torch is imported only in the process that
runs it. Without a usable GPU the script prints one line and exits with code 2.
Needs CuPy (`pip install minimod[gpu]`) on a CUDA machine, and a CUDA build of PyTorch for its
rows (`--torch-python` names another interpreter for them).
"""
import benchutil  # isort: skip  (pins the thread pools before numpy is imported)
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import workloads as wl

# minimod from this checkout (the repo root goes first on sys.path), as bench_minimod.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

NETS = ("mlp", "lenet", "lstm")
LIBS = ("minimod", "minimod-eager", "torch", "torch-graph")
#: steps the profiler watches to sum the GPU's kernel time per step
KERNEL_STEPS = 20
MIN_WINDOWS = 5
NO_GPU_EXIT = 2


def _gpu_status():
    """(GPU count, a line on the backend) from minimod's backend, which needs only NumPy to
    import; CuPy is imported there only if it is installed."""
    from minimod import backend
    return backend.gpu_count(), backend.cupy_status()


def run_minimod(args) -> dict:
    import minimod as mx
    if mx.num_gpus() == 0:
        raise SystemExit("minimod sees no GPU: %s" % mx.backend.cupy_status())
    import cupy

    from minimod import gemm
    ctx = mx.gpu(0)
    mod, batches = wl.make_module(mx, args.net, args.batch, context=ctx)
    for b in batches:  # on the GPU before timing
        b.data = [d.as_in_context(ctx) for d in b.data]
        b.label = [lab.as_in_context(ctx) for lab in b.label]
    step = wl.module_step_fn(mod, batches)
    timer = benchutil.timer_from_args(args, mx.nd.waitall, args.batch)
    result = benchutil.measure(step, timer)
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return dict(result, version=mx.__minimod_version__, cupy=cupy.__version__,
                device=name.decode() if isinstance(name, bytes) else str(name),
                convolution=mx.backend.cudnn_status(), gemm=gemm.blas_status(),
                graphs=graph_summary(mod), **kernel_time(step, mx.nd.waitall))


def graph_summary(mod) -> str:
    """How the first device's executor ran its step lists and how the optimizer's update
    ran: 'train: graph; update: graph' and the like, or why a part stayed eager."""
    from minimod.flat import update_graph_status
    inner = getattr(mod, "_curr_module", mod)  # a BucketingModule's current bucket
    status = {(k if isinstance(k, str) else k[0]): v
              for k, v in inner._exec_group.execs[0].graph_status().items()}
    updater = inner._kvstore.updater if inner._update_on_kvstore else inner._updater
    for (_, _, key), how in update_graph_status(updater).items():
        status["update" if key == "all" else key[0]] = how
    return "; ".join("%s: %s" % item for item in sorted(status.items()))


def kernel_time(step, synchronize) -> dict:
    """{"kernel_ms_per_step": the GPU's summed kernel time per step}, as PyTorch's profiler
    (CUPTI, which sees every kernel of the process, CuPy's too) counts it over KERNEL_STEPS
    steps; {"kernel_ms_per_step_error": why} where that profiler is not available. The gap to
    the step time is what launching and the host cost."""
    try:
        from torch.profiler import ProfilerActivity, profile
    except ImportError as err:
        return {"kernel_ms_per_step_error": "no torch.profiler (%s)" % err}
    synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(KERNEL_STEPS):
            step()
        synchronize()
    total_us = sum(e.self_device_time_total for e in prof.key_averages())
    return {"kernel_ms_per_step": total_us / 1000.0 / KERNEL_STEPS}


def run_torch_graph(args) -> dict:
    """PyTorch with the whole training step captured once as a CUDA graph and replayed
    (torch.cuda.graph), the batch copied into the captured input tensors before each replay:
    the strongest eager-framework anchor, with no per-kernel launch cost."""
    return run_torch(args, graphs=True)


def run_torch(args, graphs: bool = False) -> dict:
    try:
        import torch
    except ImportError as err:
        raise SystemExit("PyTorch is not installed in %s (%s)" % (sys.executable, err))
    from bench_torch import build
    if not torch.cuda.is_available():
        raise SystemExit("PyTorch %s sees no CUDA device (a CPU-only build?)" % torch.__version__)
    device = torch.device("cuda:0")
    model, _, batches, _ = build(args.net, args.batch)
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=wl.LR, momentum=wl.MOMENTUM)
    batches = [(x.to(device), y.to(device)) for (x,), y in batches]  # one input each
    loss_fn = torch.nn.CrossEntropyLoss()
    state = {"i": 0}

    def eager_step():
        x, y = batches[state["i"] % len(batches)]
        state["i"] += 1
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    step = _graph_step(torch, model, opt, loss_fn, batches) if graphs else eager_step
    timer = benchutil.timer_from_args(args, torch.cuda.synchronize, args.batch)
    result = benchutil.measure(step, timer)
    return dict(result, version=torch.__version__, device=torch.cuda.get_device_name(0),
                **kernel_time(step, torch.cuda.synchronize))


def _graph_step(torch, model, opt, loss_fn, batches):
    """The training step captured as one CUDA graph (after warm-up steps on a side stream,
    which also create the momentum buffers), and a step function that copies the next batch
    into the captured inputs and replays it."""
    static_x, static_y = (t.clone() for t in batches[0])
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss_fn(model(static_x), static_y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss_fn(model(static_x), static_y).backward()
        opt.step()
    state = {"i": 0}

    def step():
        x, y = batches[state["i"] % len(batches)]
        state["i"] += 1
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()
    return step


def run_one(args) -> None:
    args.batch = args.batch or benchutil.default_batch(args.net)
    args.mode = "module"
    if args.one == "minimod-eager":
        os.environ["MINIMOD_CUDA_GRAPHS"] = "0"  # read when the executors bind
    run = {"minimod": run_minimod, "minimod-eager": run_minimod, "torch": run_torch,
           "torch-graph": run_torch_graph}
    result = run[args.one](args)
    if result["windows"] < MIN_WINDOWS:
        result["too_few_windows"] = True
    benchutil.emit(args.one + "-gpu", args, result, numpy=np.__version__)


def _cell(record) -> str:
    if record is None:
        return "-"
    if "error" in record:
        return "not run: %s" % record["error"]
    flag = " (noisy)" if record.get("noisy") or record.get("too_few_windows") else ""
    kernels = record.get("kernel_ms_per_step")
    kernel = "; kernels %.2f ms" % kernels if kernels is not None else ""
    return "%.1f (%.2f ms%s)%s" % (record["samples_per_s"], record["ms_per_step"], kernel, flag)


def _ratio(mine, theirs) -> str:
    ok = [r for r in (mine, theirs) if r is not None and "error" not in r]
    return "%.2f" % (mine["samples_per_s"] / theirs["samples_per_s"]) if len(ok) == 2 else "-"


def table(records: list) -> str:
    """The runs as a Markdown table, one row per net, with the minimod/torch ratio."""
    by = {(r["lib"], r["net"]): r for r in records}
    nets = [n for n in (NETS + ("lstm_fused",)) if any(k[1] == n for k in by)]
    device = next((r.get("device") for r in records if r.get("device")), "unknown GPU")
    versions = sorted({"%s %s" % (r["lib"].replace("-gpu", ""), r["version"])
                       for r in records if "version" in r}
                      | {"cupy %s" % r["cupy"] for r in records if "cupy" in r})
    lines = ["GPU: %s; %s; median step time over >= %d timed windows, each closed by a device "
             "synchronisation; kernels: the GPU's summed kernel time per step (PyTorch's "
             "profiler over %d steps)" % (device, ", ".join(versions) or "no run", MIN_WINDOWS,
                                          KERNEL_STEPS), "",
             "| net | batch | minimod gpu: samples/s (ms/step) | minimod eager (no graphs) | "
             "torch cuda: samples/s (ms/step) | minimod/torch | torch cuda graph: samples/s "
             "(ms/step) | minimod/torch graph |",
             "|---|---|---|---|---|---|---|---|"]
    for net in nets:
        mm, me, pt, pg = (by.get((lib, net)) for lib in (
            "minimod-gpu", "minimod-eager-gpu", "torch-gpu", "torch-graph-gpu"))
        batch = next((r["batch"] for r in (mm, me, pt, pg) if r and r.get("batch")), "-")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            net, batch, _cell(mm), _cell(me), _cell(pt), _ratio(mm, pt), _cell(pg),
            _ratio(mm, pg)))
    paths = sorted({r["convolution"] for r in records if r.get("convolution")})
    if paths:  # whether minimod's convolution and pooling ran through cuDNN or im2col
        lines += ["", "minimod's convolution and pooling: %s" % "; ".join(paths)]
    graphs = ["%s: %s" % (r["net"], r["graphs"]) for r in records
              if r.get("lib") == "minimod-gpu" and r.get("graphs")]
    if graphs:  # which of minimod's step lists replayed as CUDA graphs
        lines += ["", "minimod's CUDA graphs: %s" % " | ".join(graphs)]
    gemms = sorted({r["gemm"] for r in records if r.get("gemm")})
    if gemms:
        lines += ["", "minimod's matrix products: %s" % "; ".join(gemms)]
    return "\n".join(lines)


def append_results(path: str, text: str) -> None:
    """Append the table under a dated heading (a temp file, then os.replace)."""
    old = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    block = "\n## GPU: minimod (CuPy) vs PyTorch CUDA (%s)\n\n%s\n" % (
        time.strftime("%Y-%m-%d"), text)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(old.rstrip("\n") + "\n" + block if old else block.lstrip("\n"))
    os.replace(tmp, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--one", choices=LIBS, help="run one library on --net and print its "
                        "JSON line (the driver calls itself this way)")
    parser.add_argument("--net", choices=NETS + ("lstm_fused",))
    parser.add_argument("--nets", default=",".join(NETS))
    parser.add_argument("--libs", default=",".join(LIBS))
    parser.add_argument("--batch", type=int, default=None,
                        help="default: 128 (mlp), 64 (lenet), 32 (lstm)")
    parser.add_argument("--results", metavar="PATH", help="append the table to this Markdown "
                        "file (e.g. benchmarks/RESULTS.md)")
    parser.add_argument("--torch-python", default=sys.executable,
                        help="interpreter with a CUDA build of PyTorch (default: this one)")
    for name, default in (("--window", 0.4), ("--warmup", 2.0), ("--max-s", 30.0)):
        parser.add_argument(name, type=float, default=default)
    parser.add_argument("--quiet-windows", type=int, default=7)
    parser.add_argument("--quiet-cores", type=float, default=0.15)
    args = parser.parse_args()
    if args.quiet_windows < MIN_WINDOWS:
        parser.error("--quiet-windows must be at least %d" % MIN_WINDOWS)
    if args.one and not args.net:
        parser.error("--one needs --net")
    if not (args.one or "").startswith("torch"):  # a torch run checks CUDA itself, maybe
        # in an interpreter without CuPy
        count, status = _gpu_status()
        if count == 0:
            sys.stderr.write("bench_gpu: no usable GPU, nothing measured (%s)\n" % status)
            sys.exit(NO_GPU_EXIT)
    if args.one:
        run_one(args)
        return
    records = []
    here = os.path.dirname(os.path.abspath(__file__))
    for net in args.nets.split(","):
        for lib in args.libs.split(","):
            python = args.torch_python if lib.startswith("torch") else sys.executable
            cmd = [python, os.path.join(here, "bench_gpu.py"), "--one", lib, "--net", net,
                   "--window", str(args.window), "--warmup", str(args.warmup),
                   "--max-s", str(args.max_s), "--quiet-windows", str(args.quiet_windows),
                   "--quiet-cores", str(args.quiet_cores)]
            if args.batch:
                cmd += ["--batch", str(args.batch)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                why = (proc.stderr.strip().splitlines() or ["exit code %d" % proc.returncode])
                record = {"lib": lib + "-gpu", "net": net, "error": why[-1][:200]}
                sys.stderr.write("%s %s failed:\n%s\n" % (lib, net, proc.stderr[-2000:]))
                print(json.dumps(record), flush=True)
                records.append(record)
                continue
            for line in lines:
                print(line, flush=True)
                records.append(json.loads(line))
    text = table(records)
    print()
    print(text)
    if args.results:
        append_results(args.results, text)
        print("\nappended to %s" % args.results)


if __name__ == "__main__":
    main()
