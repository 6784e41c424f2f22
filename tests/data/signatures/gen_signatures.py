"""Writes op_signatures.json from MXNet 1.9.1 (run with MXNet's Python, not minimod's):

- "ops": for each operator name minimod registers (read from minimod's own list, opnames.json
  beside this file), the inputs and the parameters of MXNet's generated `mx.sym.<op>` in the
  order they are taken positionally, or {"variadic": true} for `(*data, **kwargs)` ops;
- "calls": symbols built with positional parameters (`CALLS` below) and the nodes MXNet's
  JSON gives them, so the tests check minimod maps positional arguments the same way.

    python3 -c "import json, minimod.ops as o; json.dump(sorted(o.list_ops()), \
        open('tests/data/signatures/opnames.json', 'w'))"
    /path/to/mxnet-venv/bin/python tests/data/signatures/gen_signatures.py
"""
import inspect
import json
import os

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))

# (op, positional arguments after the data symbol "x" (None: not given; "w"/"b"/"y": more
# symbols), keyword arguments)
CALLS = [
    ("clip", [0, 1], {}),
    ("reshape", [(0, -1)], {}),
    ("Reshape", [(2, -1), True], {}),
    ("transpose", [(1, 0)], {}),
    ("sum", [1, True], {}),
    ("slice_axis", [1, 0, 2], {}),
    ("expand_dims", [1], {}),
    ("one_hot", [10, 2.0], {}),
    ("Dropout", [0.5], {}),
    ("Activation", ["relu"], {}),
    ("SliceChannel", [2, 0], {}),
    ("split", [2], {"squeeze_axis": True}),
    ("Cast", ["float16"], {}),
    ("FullyConnected", ["w", "b", 10], {}),
    ("FullyConnected", [None, None, 10, True], {}),
    ("Convolution", [None, None, (3, 3), (2, 2), (1, 1), (1, 1), 8], {}),
    ("Deconvolution", [None, None, (2, 2), (2, 2), (), (), (1, 1), (), 4], {}),
    ("LRN", [0.001, 0.75, 2, 5], {}),
    ("Pooling", [(2, 2), "max"], {"stride": (2, 2)}),
    ("SequenceMask", [None, False, -1.0], {}),
    ("LeakyReLU", [None, "leaky", 0.2], {}),
    ("topk", [1, 3], {}),
    ("softmax", [None, 0], {}),
    ("log_softmax", [1, 2.0], {}),
    ("Concat", ["y"], {"dim": 0}),
    ("BatchNorm", [None, None, None, None, 1e-3, 0.8], {}),
    ("Embedding", [None, 100, 8], {}),
    ("RNN", [None, None, None, None, 16, 2, False, "gru"], {}),
    ("pick", ["y", 0, True], {}),
    ("SoftmaxOutput", ["y", 2.0], {}),
]


# mx.sym.random calls: (function, positional arguments, keyword arguments); "x"/"y" are symbols
RANDOM_CALLS = [
    ("uniform", [0, 1], {"shape": (2, 3)}),
    ("normal", ["x", "y"], {"shape": (2,)}),
    ("randn", [2, 3], {"loc": 1.0}),
    ("randint", [0, 5], {"shape": (3,)}),
    ("exponential", [2.0], {"shape": (3,)}),
    ("gamma", [2.0, 0.5], {"shape": (4,), "dtype": "float64"}),
    ("poisson", ["x"], {"shape": (2,)}),
    ("negative_binomial", [3, 0.4], {"shape": (2,)}),
    ("generalized_negative_binomial", [2.0, 0.5], {"shape": (2,)}),
    ("uniform_like", ["x"], {}),
    ("normal_like", ["x", 1.0, 2.0], {}),
    ("shuffle", ["x"], {}),
]


def signature(fn) -> dict:
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.name not in ("name", "attr", "out", "kwargs")]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return {"variadic": True}
    return {"inputs": [p.name for p in params if p.default is None],
            "params": [p.name for p in params if p.default is not None]}


# the prefixed operators MXNet serves in a namespace (`_contrib_X` is mx.sym.contrib.X)
NAMESPACES = {"_contrib_": "contrib", "_linalg_": "linalg", "_image_": "image"}


def op_fn(name):
    """MXNet's generated `mx.sym` function of operator `name`, or None when MXNet has no
    operator of that name (minimod registers a few of MXNet's Python functions as ops)."""
    if name.startswith("_random_") and name.endswith("_like"):  # only in mx.sym.random
        return getattr(mx.sym.random, name[len("_random_"):])
    for prefix, namespace in NAMESPACES.items():
        if name.startswith(prefix):
            fn = getattr(getattr(mx.sym, namespace), name[len(prefix):], None)
            if fn is not None:
                return fn
    return getattr(mx.sym, name, None) or getattr(mx.sym._internal, name, None)


def main():
    names = json.load(open(os.path.join(HERE, "opnames.json")))
    ops = {name: signature(op_fn(name)) for name in names if op_fn(name) is not None}
    missing = sorted(set(names) - set(ops))
    if missing:
        print("not operators in MXNet 1.9.1 (list them in test_signatures.py):", missing)
    syms = {k: mx.sym.var(k) for k in ("x", "w", "b", "y")}
    calls = []
    for op, args, kwargs in CALLS:
        args = [syms[a] if isinstance(a, str) and a in syms else a for a in args]
        out = op_fn(op)(syms["x"], *args, name="node", **kwargs)
        graph = json.loads(out.tojson())
        node = graph["nodes"][-1]
        calls.append({"op": op, "args": [a if not isinstance(a, mx.sym.Symbol) else a.name
                                        for a in args],
                      "kwargs": kwargs, "node_op": node["op"], "attrs": node.get("attrs", {}),
                      "inputs": [graph["nodes"][e[0]]["name"] for e in node["inputs"]]})
    random_calls = []
    for fn, args, kwargs in RANDOM_CALLS:
        args_sym = [syms[a] if isinstance(a, str) and a in syms else a for a in args]
        out = getattr(mx.sym.random, fn)(*args_sym, name="node", **kwargs)
        graph = json.loads(out.tojson())
        node = graph["nodes"][-1]
        shapes = out.infer_shape_partial(**{a: (2,) for a in out.list_arguments()})[1]
        random_calls.append({"fn": fn, "args": args, "kwargs": kwargs, "node_op": node["op"],
                             "attrs": node.get("attrs", {}), "out_shape": shapes[0],
                             "inputs": [graph["nodes"][e[0]]["name"] for e in node["inputs"]]})
    with open(os.path.join(HERE, "op_signatures.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "ops": ops, "calls": calls,
                   "random_calls": random_calls}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
