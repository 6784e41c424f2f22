"""Where minimod's training step spends its time, beside a hand-written NumPy step.

    python3 benchmarks/profile_steps.py [--quick]       (prints a Markdown section)

For each workload it times minimod's Module step (median of windows), then runs it again with
timers around every op, around the optimizer update, and around NumPy's GEMM entry points
(`numpy.matmul` and `numpy.dot`, swapped for timed wrappers while profiling), and splits the
step into:
  BLAS         time inside matmul/dot calls (the GEMMs of FullyConnected, Convolution, RNN)
  other ops    the rest of the ops' own time: elementwise work, im2col copies, reductions
  update       Module.update (kvstore and optimizer)
  framework    the plain step time minus the three above: the executor's loop, Module's
               bookkeeping, loading the batch (the timers' own cost stays out of it)
The hand-written NumPy step (handwritten.py, same model, preallocated buffers) is timed in
windows alternating with minimod's (the machine changes speed for minutes at a time, so only
back-to-back pairs compare), and its GEMMs the same way: the last columns show what is left
between minimod and code with no framework.

    python3 benchmarks/profile_steps.py --ops lenet:64 [lstm_fused:32 ...]

prints instead, for each named workload, the time of every forward and backward node and of
the update (ms per step, largest first): which op a workload's "other op work" sits in.

    python3 benchmarks/profile_steps.py --tiny

prints only the per-step overhead table (`tiny_overhead`), which ends the full output too.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

import benchutil  # noqa: F401  # isort: skip  (threads and BLAS kernels, before numpy)
import handwritten
import numpy as np
import workloads

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))
import minimod as mx  # noqa: E402

WORKLOADS = [("mlp", 128, "mlp"), ("mlp", 32, "mlp"), ("lenet", 64, "lenet"),
             ("lstm", 32, "lstm"), ("lstm_fused", 32, "lstm")]


class Clock:
    """Accumulates seconds per category."""

    def __init__(self):
        self.total = {}

    def add(self, key, seconds):
        self.total[key] = self.total.get(key, 0.0) + seconds


def _timed(fn, clock, key):
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            clock.add(key, time.perf_counter() - t0)
    return wrapper


def _window_ms(step, seconds: float) -> float:
    """ms per step of `step` run for about `seconds` (at least once)."""
    n, t0 = 0, time.perf_counter()
    while True:
        step()
        n += 1
        if time.perf_counter() - t0 >= seconds:
            break
    return (time.perf_counter() - t0) / n * 1e3


def median_step_ms(step, seconds: float, windows: int = 5) -> float:
    for _ in range(3):
        step()
    return statistics.median(_window_ms(step, seconds / windows) for _ in range(windows))


def paired_ms(step_a, step_b, seconds: float, windows: int = 8) -> tuple:
    """Alternating windows of two steps: (median ms of a, median ms of b, median of the
    per-pair ratios a / b). Pairs taken back to back share the machine's speed mode, so the
    ratio holds where the two medians alone, taken minutes apart, would not."""
    for _ in range(3):
        step_a()
        step_b()
    a, b = [], []
    for _ in range(windows):
        a.append(_window_ms(step_a, seconds / windows))
        b.append(_window_ms(step_b, seconds / windows))
    return (statistics.median(a), statistics.median(b),
            statistics.median(x / y for x, y in zip(a, b)))


def run_instrumented(step, seconds: float, clock: Clock) -> int:
    """Run `step` for about `seconds` with NumPy's GEMMs timed; returns the step count."""
    real = np.matmul, np.dot
    np.matmul = _timed(real[0], clock, "blas")
    np.dot = _timed(real[1], clock, "blas")
    try:
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            step()
            n += 1
    finally:
        np.matmul, np.dot = real
    return n


def _executor(mod):
    inner = getattr(mod, "_curr_module", None) or mod
    return inner, inner._exec_group.execs[0]


def _executors(mod) -> list:
    """Every executor under `mod`: a BucketingModule's current module, a SequentialModule's
    modules, a residual module's branch (workloads_more.py), a Module's executors."""
    todo, found = [mod], []
    while todo:
        m = todo.pop()
        inner = getattr(m, "_curr_module", None) or getattr(m, "_branch", None)
        if inner is not None:
            todo.append(inner)
        elif hasattr(m, "_modules"):
            todo.extend(m._modules)
        else:
            found.extend(m._exec_group.execs)
    return found


def _instrumented(net: str, batch: int, seconds: float, label, timing) -> tuple:
    """Time a workload's plain step with `timing(step)`, then run it with a timer around every
    op step (under `label(direction, node)`), around the update and around NumPy's GEMMs.
    Returns (module, executor, what timing returned, clock, steps run while instrumented)."""
    mod, batches = workloads.make_module(mx, net, batch)
    step = workloads.module_step_fn(mod, batches)
    plain = timing(step)
    executors = _executors(mod)
    clock = Clock()
    # the executors run these steps' functions; wrap each op's step, then the update
    for exe in executors:
        exe._steps = exe._steps.rewrapped(lambda op_step: dataclasses.replace(
            op_step, run=_timed(op_step.run, clock, label(
                "forward" if op_step.forward else "backward", op_step.node))))
    mod.update = _timed(mod.update, clock, "update")
    n = run_instrumented(step, seconds, clock)
    return mod, executors, plain, clock, n


def profile_minimod(net: str, batch: int, seconds: float, hand_step) -> dict:
    _, executors, paired, clock, n = _instrumented(
        net, batch, seconds, lambda d, node: "ops",
        timing=lambda step: paired_ms(step, hand_step, 2 * seconds))
    plain, hand_plain, vs_hand = paired
    per = {k: v / n * 1e3 for k, v in clock.total.items()}
    nodes = sum(len(exe._steps.train) for exe in executors)
    blas = per.get("blas", 0.0)
    # BLAS inside the update (none for SGD) would be counted twice; ops hold the rest
    other = max(per.get("ops", 0.0) - blas, 0.0)
    framework = plain - blas - other - per.get("update", 0.0)
    return {"plain": plain, "blas": blas, "other": other, "update": per.get("update", 0.0),
            "framework": framework, "nodes": nodes, "hand_plain": hand_plain,
            "vs_hand": vs_hand}


def per_op(net: str, batch: int, seconds: float) -> tuple:
    """(plain step ms, update ms when run back to back, [(ms per step, label)] of every
    forward/backward node and of the update inside steps, largest first)."""
    mod, _, plain, clock, n = _instrumented(
        net, batch, seconds, lambda d, node: "%s %s (%s)" % (d, node.name, node.op.name),
        timing=lambda step: median_step_ms(step, seconds))
    rows = sorted(((v / n * 1e3, k) for k, v in clock.total.items() if k != "blas"),
                  reverse=True)
    # the same update back to back, its arrays warm in the caches (inside a step, forward and
    # backward have evicted them)
    return plain, median_step_ms(mod.update, seconds), rows


def handwritten_step(kind: str, batch: int, **kw):
    model = handwritten.MODELS[kind](batch, **kw)
    model.want_loss = False  # Module's step computes none
    x, y = handwritten.data(kind, batch, **({"dims": kw["dims"]} if "dims" in kw else {}))
    return lambda: model.step(x, y)


def _framework_cells(m: dict) -> tuple:
    """The 'framework', 'nodes' and 'framework per node' cells of a profile row."""
    if m["framework"] < 0:
        return "below resolution", m["nodes"], "-"
    return ("%.2f (%.0f%%)" % (m["framework"], 100 * m["framework"] / m["plain"]), m["nodes"],
            "%.1f us" % (1e3 * m["framework"] / max(m["nodes"], 1)))


TINY_WINDOWS = 24  # pairs of alternating windows per comparison of tiny_overhead


def tiny_overhead(seconds: float) -> dict:
    """minimod's own cost per step, on a 4-8-8-2 MLP at batch 1 where every op is trivial,
    measured three ways in pairs of alternating windows (the machine drifts between windows
    as much as the few microseconds measured; each figure is the second step's median times
    the median per-pair ratio):

      module     the Module step: forward_backward(batch) + update()
      kernels    the array work of that step without the framework: its 12 op steps called
                 in a plain loop, then the optimizer's four passes over copies of its flat
                 buffers (the batch copies into the executor count as framework)
      hand       the hand-written NumPy step of the model, updating tensor by tensor
      hand_flat  the same with its parameters in one flat buffer, updated in four passes

    module - kernels is the framework's own time: Module, the executor group, the executor's
    dispatch, loading the batch and the update's bookkeeping. The hand steps put it beside
    code with no framework at all. Returns the medians in us and the node count."""
    dims = (4, 8, 8, 2)
    net = mx.sym.Variable("data")
    for i, hidden in enumerate(dims[1:], 1):
        net = mx.sym.FullyConnected(net, num_hidden=hidden, name="fc%d" % i)
        if i < len(dims) - 1:
            net = mx.sym.Activation(net, act_type="relu", name="relu%d" % i)
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, data_names=("data",), label_names=("softmax_label",))
    mod.bind(data_shapes=[("data", (1, dims[0]))], label_shapes=[("softmax_label", (1,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd",
                       optimizer_params={"learning_rate": 0.01, "momentum": 0.9})
    x, y = handwritten.data("mlp", 1, dims=dims)
    batch = mx.io.DataBatch(data=[mx.nd.array(x)], label=[mx.nd.array(y)])

    def step():
        mod.forward_backward(batch)
        mod.update()

    _, exe = _executor(mod)
    flat = exe.flat_params[0]
    sgd = handwritten._FlatSGD(flat.weight.copy(), flat.grad.copy())
    op_steps = [step.run for step in exe._steps.train]

    def kernels():
        for fn in op_steps:
            fn(np, True)
        sgd.update()

    out = {"nodes": len(op_steps)}
    for name, other in (("kernels", kernels), ("hand", handwritten_step("mlp", 1, dims=dims)),
                        ("hand_flat", handwritten_step("mlp", 1, dims=dims, flat=True))):
        _, other_ms, ratio = paired_ms(step, other, 3 * seconds, windows=TINY_WINDOWS)
        out[name] = other_ms * 1e3
        out["module_vs_" + name] = ratio * other_ms * 1e3
    return out


def tiny_overhead_text(t: dict) -> str:
    per_node = (t["module_vs_kernels"] - t["kernels"]) / t["nodes"]
    return (
        "Per-step overhead, on a 4-8-8-2 MLP at batch 1 (every op trivial), each figure from "
        "%d pairs of alternating windows (the second step's median times the median per-pair "
        "ratio; see `tiny_overhead`):\n\n"
        "| compared with | its step, us | minimod's Module step, us | minimod's own cost, us |\n"
        "|---|---|---|---|\n"
        "| minimod's own kernels (its %d op steps in a plain loop + the optimizer's 4 passes) "
        "| %.1f | %.1f | **%.1f** (%.2f per node) |\n"
        "| hand-written NumPy step, flat-buffer update | %.1f | %.1f | %.1f |\n"
        "| hand-written NumPy step, tensor-by-tensor update | %.1f | %.1f | %.1f |" % (
            TINY_WINDOWS, t["nodes"], t["kernels"], t["module_vs_kernels"],
            t["module_vs_kernels"] - t["kernels"], per_node,
            t["hand_flat"], t["module_vs_hand_flat"], t["module_vs_hand_flat"] - t["hand_flat"],
            t["hand"], t["module_vs_hand"], t["module_vs_hand"] - t["hand"]))


def profile_handwritten(step, seconds: float) -> dict:
    """The GEMM time of a hand-written step (its plain time comes from paired_ms)."""
    clock = Clock()
    n = run_instrumented(step, seconds, clock)
    return {"blas": clock.total.get("blas", 0.0) / n * 1e3}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--tiny", action="store_true",
                        help="only the per-step overhead of the tiny MLP")
    parser.add_argument("--ops", nargs="+", metavar="NET:BATCH",
                        help="per-node times of these workloads instead of the summary table")
    args = parser.parse_args()
    seconds = 0.3 if args.quick else args.seconds
    if args.tiny:
        print(tiny_overhead_text(tiny_overhead(seconds)))
        return 0
    if args.ops:
        for spec in args.ops:
            net, batch = spec.split(":")
            plain, update_alone, rows = per_op(net, int(batch), seconds)
            print("\n%s b%s: step %.2f ms (timed without the per-node timers)"
                  % (net, batch, plain))
            for ms, label in rows:
                print("  %7.3f ms  %s" % (ms, label))
            print("  %7.3f ms  update alone, repeated back to back" % update_alone)
        return 0
    rows = []
    for net, batch, kind in WORKLOADS:
        hand_step = handwritten_step(kind, batch)
        m = profile_minimod(net, batch, seconds, hand_step)
        h = profile_handwritten(hand_step, seconds)
        rows.append((net, batch, m, h))
        print("profiled %s b%d" % (net, batch), file=sys.stderr, flush=True)
    out = ["## Profile: where a minimod training step goes", "",
           "Measured by `benchmarks/profile_steps.py` in one process right after the rounds "
           "above (ms per step; see the script's docstring for the split). 'hand NumPy' is "
           "the same model written directly in NumPy with preallocated buffers "
           "(`benchmarks/handwritten.py`; the LSTM one has the fused RNN's arithmetic); the "
           "two steps are timed in alternating windows, and 'minimod / hand' is the median "
           "of the per-pair ratios.", "",
           "| workload | minimod step | BLAS | other op work | update | framework "
           "| nodes | framework per node | hand NumPy step | its BLAS | minimod / hand |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for net, batch, m, h in rows:
        out.append("| %s b%d | %.2f | %.2f (%.0f%%) | %.2f (%.0f%%) | %.2f | %s | %d | %s "
                   "| %.2f | %.2f | %.2f |" % (
                       net, batch, m["plain"], m["blas"], 100 * m["blas"] / m["plain"],
                       m["other"], 100 * m["other"] / m["plain"], m["update"],
                       *_framework_cells(m), m["hand_plain"], h["blas"], m["vs_hand"]))
    out += ["", "'framework' is the plain step minus the op and update times measured with "
            "timers around each op; where timing ops one by one costs more than the "
            "framework itself, that difference falls below zero and the column says "
            "'below resolution': the per-step overhead table below measures it directly."]
    out += ["", tiny_overhead_text(tiny_overhead(seconds))]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
