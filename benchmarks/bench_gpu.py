"""GPU benchmark: minimod with context=mx.gpu(0) (CuPy) against PyTorch CUDA, one training step
(forward + backward + SGD-momentum update) of the MLP, LeNet and LSTM workloads.

    python benchmarks/bench_gpu.py                      # every net, both libraries
    python benchmarks/bench_gpu.py --nets mlp --libs minimod
    python benchmarks/bench_gpu.py --one minimod --net lenet   # one run, one JSON line

Each (library, net) pair runs in its own process (`--one`), so the libraries never share a GPU
memory pool; the driver prints every JSON line as it comes and a Markdown table at the end.
The networks, data, initialisation and optimizer are those of workloads.py (the CPU
benchmarks'); the timer is benchutil's WindowTimer with a device synchronisation
(`mx.nd.waitall()` / `torch.cuda.synchronize()`) closing every window, so queued GPU work is
counted. Needs CuPy (`pip install minimod[gpu]`) and a CUDA build of PyTorch on a GPU machine.
"""
import benchutil  # isort: skip  (pins the thread pools before numpy is imported)
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import workloads as wl

NETS = ("mlp", "lenet", "lstm")
LIBS = ("minimod", "torch")


def _minimod_module(mx, net: str, batch: int):
    """workloads.make_module on gpu(0): the same symbol, initializer and optimizer."""
    ctx = mx.gpu(0)
    mx.random.seed(wl.SEED)
    data_shapes = [("data", wl.data_shape(net, batch))]
    label_shapes = [("softmax_label", wl.label_shape(net, batch))]
    extra = {}
    if net.startswith("lstm"):
        def sym_gen(seq_len):
            return (wl.lstm_symbol(mx, net == "lstm_fused", seq_len), ("data",),
                    ("softmax_label",))
        mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=wl.SEQ_LEN, context=ctx)
        extra = {"bucket_key": wl.SEQ_LEN,
                 "provide_data": [mx.io.DataDesc(*d) for d in data_shapes],
                 "provide_label": [mx.io.DataDesc(*d) for d in label_shapes]}
    else:
        mod = mx.mod.Module(wl.symbol(mx, net), data_names=("data",),
                            label_names=("softmax_label",), context=ctx)
    mod.bind(data_shapes=data_shapes, label_shapes=label_shapes)
    mod.init_params(initializer=wl.initializer(mx, net))
    mod.init_optimizer(optimizer="sgd",
                       optimizer_params={"learning_rate": wl.LR, "momentum": wl.MOMENTUM})
    # the batches live on the GPU already, as a prefetching data loader would leave them
    batches = [mx.io.DataBatch(data=[mx.nd.array(x, ctx=ctx)], label=[mx.nd.array(y, ctx=ctx)],
                               **extra) for x, y in wl.numpy_batches(net, batch)]
    return mod, batches


def run_minimod(args) -> dict:
    import minimod as mx
    if mx.num_gpus() == 0:
        raise SystemExit("minimod sees no GPU: %s" % mx.backend.cupy_status())
    mod, batches = _minimod_module(mx, args.net, args.batch)
    step = wl.module_step_fn(mod, batches)
    timer = benchutil.timer_from_args(args, mx.nd.waitall, args.batch)
    result = benchutil.measure(step, timer)
    import cupy
    return dict(result, version=mx.__version__,
                cupy=cupy.__version__, device=cupy.cuda.runtime.getDeviceProperties(0)[
                    "name"].decode())


def run_torch(args) -> dict:
    import torch
    from bench_torch import build
    if not torch.cuda.is_available():
        raise SystemExit("PyTorch sees no CUDA device")
    device = torch.device("cuda:0")
    model, _, batches = build(args.net, args.batch)
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=wl.LR, momentum=wl.MOMENTUM)
    batches = [(x.to(device), y.to(device)) for x, y in batches]
    loss_fn = torch.nn.CrossEntropyLoss()
    state = {"i": 0}

    def step():
        x, y = batches[state["i"] % len(batches)]
        state["i"] += 1
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    timer = benchutil.timer_from_args(args, torch.cuda.synchronize, args.batch)
    result = benchutil.measure(step, timer)
    return dict(result, version=torch.__version__, device=torch.cuda.get_device_name(0))


def run_one(args) -> None:
    args.batch = args.batch or benchutil.default_batch(args.net)
    args.mode = "module"
    result = (run_minimod if args.one == "minimod" else run_torch)(args)
    benchutil.emit(args.one + "-gpu", args, result, numpy=np.__version__)


def table(records: list) -> str:
    """The runs as a Markdown table, one row per net, with the minimod/torch ratio."""
    by = {(r["lib"], r["net"]): r for r in records}
    nets = [n for n in NETS if any(k[1] == n for k in by)]
    device = next((r.get("device") for r in records if r.get("device")), "unknown GPU")
    lines = ["GPU: %s" % device, "",
             "| net | batch | minimod gpu (samples/s) | torch cuda (samples/s) | minimod/torch |",
             "|---|---|---|---|---|"]
    for net in nets:
        mm, pt = by.get(("minimod-gpu", net)), by.get(("torch-gpu", net))
        ratio = ("%.2f" % (mm["samples_per_s"] / pt["samples_per_s"])) if mm and pt else "-"
        batch = (mm or pt)["batch"]
        lines.append("| %s | %d | %s | %s | %s |" % (
            net, batch, "%.1f" % mm["samples_per_s"] if mm else "-",
            "%.1f" % pt["samples_per_s"] if pt else "-", ratio))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--one", choices=LIBS, help="run one library on --net and print its "
                        "JSON line (the driver calls itself this way)")
    parser.add_argument("--net", choices=NETS)
    parser.add_argument("--nets", default=",".join(NETS))
    parser.add_argument("--libs", default=",".join(LIBS))
    parser.add_argument("--batch", type=int, default=None)
    for name, default in (("--window", 0.4), ("--warmup", 2.0), ("--max-s", 30.0)):
        parser.add_argument(name, type=float, default=default)
    parser.add_argument("--quiet-windows", type=int, default=7)
    parser.add_argument("--quiet-cores", type=float, default=0.15)
    args = parser.parse_args()
    if args.one:
        if not args.net:
            parser.error("--one needs --net")
        run_one(args)
        return
    records = []
    here = os.path.dirname(os.path.abspath(__file__))
    for net in args.nets.split(","):
        for lib in args.libs.split(","):
            cmd = [sys.executable, os.path.join(here, "bench_gpu.py"), "--one", lib,
                   "--net", net, "--window", str(args.window), "--warmup", str(args.warmup),
                   "--max-s", str(args.max_s), "--quiet-windows", str(args.quiet_windows),
                   "--quiet-cores", str(args.quiet_cores)]
            if args.batch:
                cmd += ["--batch", str(args.batch)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.stderr.write("%s %s failed:\n%s\n" % (lib, net, proc.stderr[-2000:]))
                continue
            for line in proc.stdout.splitlines():
                if line.startswith("{"):
                    print(line, flush=True)
                    records.append(json.loads(line))
    print()
    print(table(records))


if __name__ == "__main__":
    main()
