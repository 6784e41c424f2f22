"""opfuzz: random operator cases run under MXNet 1.9.1 and minimod, every output and gradient
compared. Outside the test suite (it needs MXNet, and takes minutes); what it finds becomes a
test with MXNet's numbers in tests/data, or a line in docs/compatibility.md where MXNet is the
one at fault.

    python tools/opfuzz/run.py --mxnet-python /tmp/mxenv/bin/python [--family nn]
                               [--seed 1] [--cases 300]

Each family (fam_<name>.py) gives case dicts: `op` (an mx.sym name), `params`, `shapes`
(input name -> shape; None leaves it to inference) and how to fill the inputs: `int_input`
(name, low, high) integers, `positive`, `domain` ('half' |x| < 0.9, 'pos', 'gt1'), `spd` /
`tri` / `wellcond` matrices, `boxes`, `rois`, `ctc` labels, `distinct` indices, `small`
values, `dtype` of every input; `no_grad` skips backward. Both libraries run the same case
code (`run_cases`, in a subprocess per library), bind with simple_bind, fill the inputs from
one seeded generator, run a training forward and a backward with seeded head gradients, and
save every array; `compare` then reports cases where one library fails and the other does
not, shapes that differ, and values beyond rtol 2e-4 / atol 2e-5 (float16: 2e-3 / 1e-3, its
rounding), leaving out the differences KNOWN lists (each an MXNet bug documented in
docs/compatibility.md, or a case MXNet cannot run). Exit status 1 when any is left.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FAMILIES = ("nn", "heads", "rnn_linalg", "elementwise")

# (op, what in the case text marks it, why the difference is expected)
KNOWN = [
    ("LeakyReLU", '"selu"', "MXNet's selu gradient is wrong (compatibility.md)"),
    ("SoftmaxActivation", "", "MXNet's backward on 3-D+ data is wrong (compatibility.md)"),
    ("Pooling", '"full"', "MXNet's avg backward / empty max windows (compatibility.md)"),
    ("SoftmaxOutput", '"smooth_alpha": 0.1', "MXNet ignores smooth_alpha with multi_output"),
    ("slice", "", "MXNet cannot allocate a zero-size result"),
    ("Dropout", "", "random masks: the streams differ"),
    ("CTCLoss", "", "MXNet's gradient of an infeasible label is uninitialised memory"),
    ("FullyConnected", '"float16"', "MXNet's CPU has no float16 GEMM"),
    ("Convolution", '"float16"', "MXNet's CPU has no float16 GEMM"),
]


def _fill(case: dict, name: str, arr_shape: tuple, rng):
    """The values of input `name` as the case asks for them."""
    int_name = case.get("int_input", (None,))[0]
    domain = case.get("domain")
    if name == int_name and case.get("distinct"):
        return rng.permutation(case["int_input"][2] + 1)[: int(np.prod(arr_shape))].reshape(
            arr_shape
        )
    if name == int_name:
        return rng.randint(case["int_input"][1], case["int_input"][2] + 1, arr_shape)
    if case.get("rois") and name == "rois":
        return np.array([[0, 0, 0, 5, 6], [0, 2, 1, 7, 7]], dtype=np.float64)
    if case.get("spd") and name == "A":
        m = rng.uniform(-1, 1, arr_shape)
        return m @ m.transpose(0, 2, 1) + 2 * np.eye(arr_shape[-1])
    if case.get("tri") and name == "A":
        m = rng.uniform(-1, 1, arr_shape) + 3 * np.eye(arr_shape[-1])
        return np.tril(m) if case["params"].get("lower") else np.triu(m)
    if case.get("wellcond"):
        return rng.uniform(-1, 1, arr_shape) + 3 * np.eye(*arr_shape[-2:])
    if case.get("boxes"):
        corner = rng.uniform(0, 5, arr_shape[:-1] + (2,))
        return np.concatenate([corner, corner + rng.uniform(0.5, 3, corner.shape)], -1)
    if case.get("ctc") and name == "label":
        classes = case["ctc"][0]
        first = case["params"]["blank_label"] == "first"
        return (
            rng.randint(1, classes - 1, arr_shape)
            if first
            else rng.randint(0, classes - 2, arr_shape)
        )
    if domain == "half" or case.get("half"):
        return rng.uniform(-0.9, 0.9, arr_shape)
    if case.get("positive"):
        return rng.uniform(0.5, 2, arr_shape)
    if domain == "pos":
        return rng.uniform(0.2, 3, arr_shape)
    if domain == "gt1":
        return rng.uniform(1.1, 3, arr_shape)
    if case.get("small"):
        return rng.uniform(-0.5, 0.5, arr_shape)
    return rng.uniform(-1, 1, arr_shape)


def _symbol(mx, case: dict, shapes: dict):
    op = case["op"]
    fn = getattr(mx.sym, op, None)
    if fn is None and op.startswith("_contrib_"):
        fn = getattr(mx.sym.contrib, op[len("_contrib_") :])
    if fn is None:
        fn = getattr(mx.sym._internal, op)
    sym = fn(*[mx.sym.Variable(n) for n in shapes], **case["params"])
    return sym[0] if isinstance(sym, (list, tuple)) else sym


def _run_case(mx, case: dict, index: int) -> dict:
    shapes = dict(case["shapes"])
    if case["op"] == "pick":  # the index has data's shape without the picked axis
        data = list(shapes["data"])
        axis = case["params"]["axis"] % len(data)
        if case["params"].get("keepdims"):
            data[axis] = 1
        else:
            data.pop(axis)
        shapes["index"] = tuple(data)
    sym = _symbol(mx, case, shapes)
    int_name = case.get("int_input", (None,))[0]
    req = {
        n: "null"
        if n == int_name or case.get("no_grad") or n in case.get("no_grad_for", ())
        else "write"
        for n in sym.list_arguments()
    }
    bind_shapes = {k: v for k, v in shapes.items() if v is not None}
    types = {n: case["dtype"] for n in sym.list_arguments()} if case.get("dtype") else None
    exe = sym.simple_bind(mx.cpu(), grad_req=req, type_dict=types, **bind_shapes)
    rng = np.random.RandomState(1000 + index)
    for name in sorted(exe.arg_dict):
        arr = exe.arg_dict[name]
        arr[:] = _fill(case, name, arr.shape, rng).astype(arr.dtype)
    for name in sorted(exe.aux_dict):
        exe.aux_dict[name][:] = rng.uniform(0.5, 1.5, exe.aux_dict[name].shape)
    outs = exe.forward(is_train=True)
    heads = [mx.nd.array(rng.uniform(-1, 1, o.shape), dtype=o.dtype) for o in outs]
    got = {"out%d" % j: o.asnumpy() for j, o in enumerate(outs)}
    if not case.get("no_grad") and all(np.dtype(o.dtype).kind == "f" for o in outs):
        exe.backward(heads)
        for name, grad in sorted(exe.grad_dict.items()):
            if grad is not None and req.get(name) != "null":
                got["grad_" + name] = grad.asnumpy()
    return got


def run_cases(library: str, family: str, seed: int, count: int, path: str) -> None:
    """Run the family's cases under `library` ('mxnet' or 'minimod'); save to `path`."""
    mx = importlib.import_module("mxnet" if library == "mxnet" else "minimod")
    cases = importlib.import_module("fam_" + family).gen(seed, count)
    saved = {}
    for i, case in enumerate(cases):
        key = "c%d" % i
        saved[key + "_case"] = np.array(json.dumps(case, default=str))
        try:
            for name, arr in _run_case(mx, case, i).items():
                saved["%s_%s" % (key, name)] = arr
        except Exception as exc:  # a failing case is a result: compared, not fatal
            saved[key + "_err"] = np.array(("%s: %s" % (type(exc).__name__, exc))[:300])
    np.savez(path, **saved)


def _known(text: str) -> str:
    op = json.loads(text)["op"]
    for name, mark, why in KNOWN:
        if op == name and mark in text:
            return why
    return ""


def compare(mx_path: str, mm_path: str) -> list:
    """Lines describing every unexplained difference between the two runs."""
    a, b = np.load(mx_path), np.load(mm_path)
    keys = sorted({k.split("_")[0] for k in a.files}, key=lambda k: int(k[1:]))
    found = []
    for key in keys:
        text = str(a[key + "_case"])
        if _known(text):
            continue
        err_a, err_b = key + "_err" in a.files, key + "_err" in b.files
        if err_a or err_b:
            if not (err_a and err_b):
                found.append(
                    "fails on %s only: %s\n    %s"
                    % (
                        "MXNet" if err_a else "minimod",
                        text,
                        str(a[key + "_err"] if err_a else b[key + "_err"]).splitlines()[-1],
                    )
                )
            continue
        names = sorted(k for k in a.files if k.startswith(key + "_") and k != key + "_case")
        other = sorted(k for k in b.files if k.startswith(key + "_") and k != key + "_case")
        if names != other:
            found.append("different arrays %s: %s" % (sorted(set(names) ^ set(other)), text))
            continue
        for name in names:
            x, y = a[name], b[name]
            if x.shape != y.shape:
                found.append("%s: shape %s vs %s: %s" % (name, x.shape, y.shape, text))
                break
            rtol, atol = (2e-3, 1e-3) if x.dtype == np.float16 else (2e-4, 2e-5)
            if not np.allclose(
                x.astype(np.float64), y.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True
            ):
                diff = np.nanmax(np.abs(x.astype(np.float64) - y)) if x.size else 0
                found.append("%s: differs by %.3g: %s" % (name, diff, text))
                break
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mxnet-python", required=True)
    parser.add_argument("--family", choices=FAMILIES, action="append")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        library, family, seed, count, path = args.worker
        run_cases(library, family, int(seed), int(count), path)
        return 0
    unexplained = 0
    for family in args.family or FAMILIES:
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for library, python in (("mxnet", args.mxnet_python), ("minimod", sys.executable)):
                paths[library] = os.path.join(tmp, library + ".npz")
                env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, ROOT]))
                subprocess.run(
                    [
                        python,
                        __file__,
                        "--mxnet-python",
                        args.mxnet_python,
                        "--worker",
                        library,
                        family,
                        str(args.seed),
                        str(args.cases),
                        paths[library],
                    ],
                    env=env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            found = compare(paths["mxnet"], paths["minimod"])
        print("%s (seed %d): %d unexplained differences" % (family, args.seed, len(found)))
        for line in found:
            print("  " + line)
        unexplained += len(found)
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
