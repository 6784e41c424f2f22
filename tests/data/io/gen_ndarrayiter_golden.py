"""Record MXNet 1.9.1's NDArrayIter batches (ndarrayiter_golden.json) and fused RNN parameter
layout (fused_rnn_layout_golden.json) in tests/data/io/.

Run with the MXNet venv, not with minimod's environment:

    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/io/gen_ndarrayiter_golden.py

Each case stores its inputs (values and dtype), the constructor arguments, and what the
iterator produced: provide_data/provide_label, and for every epoch the batches (data, label,
pad, index) plus the cursor when the epoch ended. `script` lists the actions of a case:
"epoch" iterates until StopIteration, "take:k" takes k batches, "reset" / "hard_reset" call
those methods. Cases with shuffle=True seed NumPy's global generator with `np_seed` right
before construction.
"""
from __future__ import annotations

import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def arange(shape, dtype="float32", start=0):
    size = int(np.prod(shape))
    return {"values": (np.arange(size) + start).reshape(shape).tolist(), "dtype": dtype}


CASES = [
    # every last_batch_handle mode, 10 samples, batch 3 (a partial last batch)
    *[{"name": "basic_%s" % mode, "data": arange((10, 2)), "label": arange((10,), start=100),
       "kwargs": {"batch_size": 3, "last_batch_handle": mode},
       "script": ["epoch", "reset", "epoch", "reset", "epoch", "reset", "epoch"]}
      for mode in ("pad", "discard", "roll_over")],
    # batch size divides the data: no pad, nothing rolled over
    *[{"name": "even_%s" % mode, "data": arange((10, 2)), "label": arange((10,), start=100),
       "kwargs": {"batch_size": 5, "last_batch_handle": mode},
       "script": ["epoch", "reset", "epoch"]}
      for mode in ("pad", "discard", "roll_over")],
    # batch larger than the data: pad tiles the data
    {"name": "pad_tiles", "data": arange((3, 2)), "label": arange((3,), start=100),
     "kwargs": {"batch_size": 7, "last_batch_handle": "pad"},
     "script": ["epoch", "reset", "epoch"]},
    {"name": "pad_tiles_exact", "data": arange((3, 2)), "label": None,
     "kwargs": {"batch_size": 9, "last_batch_handle": "pad"},
     "script": ["epoch", "reset", "epoch"]},
    # reset in the middle of an epoch, and hard_reset after a partial batch was cached
    *[{"name": "midreset_%s" % mode, "data": arange((10, 2)), "label": arange((10,), start=100),
       "kwargs": {"batch_size": 4, "last_batch_handle": mode},
       "script": ["take:1", "reset", "epoch", "reset", "epoch", "hard_reset", "epoch"]}
      for mode in ("pad", "discard", "roll_over")],
    # roll_over without labels, three epochs (the leftover grows and wraps)
    {"name": "roll_over_nolabel", "data": arange((7, 3)), "label": None,
     "kwargs": {"batch_size": 3, "last_batch_handle": "roll_over"},
     "script": ["epoch", "reset", "epoch", "reset", "epoch", "reset", "epoch"]},
    # shuffled, global np.random seeded before construction
    *[{"name": "shuffle_%s" % mode, "data": arange((9, 2)), "label": arange((9,), start=100),
       "kwargs": {"batch_size": 4, "last_batch_handle": mode, "shuffle": True}, "np_seed": 3,
       "script": ["epoch", "reset", "epoch", "reset", "epoch"]}
      for mode in ("pad", "discard", "roll_over")],
    # several named inputs: dict and list forms, int and float64 sources
    {"name": "dict_inputs",
     "data": {"b_img": arange((5, 2), "float64"), "a_idx": arange((5,), "int32")},
     "label": {"lbl": arange((5,), "int64", start=10)},
     "kwargs": {"batch_size": 2, "last_batch_handle": "pad"}, "script": ["epoch"]},
    {"name": "list_inputs",
     "data": [arange((5, 2)), arange((5, 1), start=50)],
     "label": [arange((5,), start=10), arange((5,), start=20)],
     "kwargs": {"batch_size": 2, "last_batch_handle": "discard",
                "data_name": "x", "label_name": "y"}, "script": ["epoch"]},
    {"name": "list_single",
     "data": [arange((4, 2))], "label": [arange((4,))],
     "kwargs": {"batch_size": 2}, "script": ["epoch"]},
    {"name": "nd_int32_input", "data": arange((5, 2), "int32"),
     "label": arange((5,), "float64"), "as_ndarray": True,
     "kwargs": {"batch_size": 2}, "script": ["epoch"]},
    {"name": "layout_tnc", "data": arange((6, 6, 2)), "label": None,
     "kwargs": {"batch_size": 4, "layout": "TNC"}, "script": ["epoch"]},
]


def build(spec, as_ndarray, mx):
    if spec is None:
        return None
    if isinstance(spec, list):
        return [build(s, as_ndarray, mx) for s in spec]
    if "values" not in spec:
        return {k: build(v, as_ndarray, mx) for k, v in spec.items()}
    arr = np.array(spec["values"], dtype=spec["dtype"])
    return mx.nd.array(arr, dtype=arr.dtype) if as_ndarray else arr


def describe(descs):
    return [[d.name, list(d.shape), np.dtype(d.dtype).name, d.layout] for d in descs]


def record_batch(batch):
    return {
        "data": [[np.dtype(d.dtype).name, d.asnumpy().tolist()] for d in batch.data],
        "label": [[np.dtype(d.dtype).name, d.asnumpy().tolist()] for d in batch.label],
        "pad": batch.pad,
        "index": None if batch.index is None else list(map(int, batch.index)),
    }


def run_case(case, mx):
    if "np_seed" in case:
        np.random.seed(case["np_seed"])
    as_nd = case.get("as_ndarray", False)
    it = mx.io.NDArrayIter(build(case["data"], as_nd, mx), build(case["label"], as_nd, mx),
                           **case["kwargs"])
    out = {"provide_data": describe(it.provide_data),
           "provide_label": describe(it.provide_label), "steps": []}
    for action in case["script"]:
        if action == "epoch":
            batches = [record_batch(b) for b in it]
            out["steps"].append({"action": action, "batches": batches, "cursor": it.cursor,
                                 "idx": it.idx.tolist(),
                                 "provide_data": describe(it.provide_data)})
        elif action.startswith("take:"):
            batches = [record_batch(it.next()) for _ in range(int(action[5:]))]
            out["steps"].append({"action": action, "batches": batches, "cursor": it.cursor})
        else:
            getattr(it, action)()
            out["steps"].append({"action": action, "cursor": it.cursor})
    return out


def main():
    import mxnet as mx

    golden = {"mxnet_version": mx.__version__, "cases": []}
    for case in CASES:
        golden["cases"].append(dict(case, result=run_case(case, mx)))
    with open(os.path.join(HERE, "ndarrayiter_golden.json"), "w") as f:
        json.dump(golden, f, indent=None, separators=(",", ":"))
        f.write("\n")


# --------------------------------------------------------------------------- fused RNN layout
# Where each gate matrix / bias sits in the flat parameter vector of MXNet's fused RNN operator
# (what mx.init.FusedRNN initialises): recorded from FusedRNNCell.unpack_weights on a vector
# holding 0, 1, 2, ..., so a piece's first value is its offset.
RNN_CASES = [
    {"mode": "lstm", "num_hidden": 2, "num_layers": 2, "bidirectional": True, "num_input": 3},
    {"mode": "gru", "num_hidden": 3, "num_layers": 1, "bidirectional": False, "num_input": 2},
    {"mode": "rnn_tanh", "num_hidden": 2, "num_layers": 3, "bidirectional": False,
     "num_input": 4},
]


def rnn_layout(case, mx):
    cell = mx.rnn.FusedRNNCell(case["num_hidden"], case["num_layers"], case["mode"],
                               case["bidirectional"], prefix="")
    dirs = 2 if case["bidirectional"] else 1
    gates = {"lstm": 4, "gru": 3}.get(case["mode"], 1)
    h, li = case["num_hidden"], case["num_input"]
    size = (li + h + 2) * h * gates * dirs \
        + (case["num_layers"] - 1) * gates * h * (h + dirs * h + 2) * dirs
    pieces = cell.unpack_weights({"parameters": mx.nd.arange(size, dtype="float64")})
    layout = sorted((int(v.asnumpy().reshape(-1)[0]), k, list(v.shape))
                    for k, v in pieces.items())
    return {"size": size, "pieces": [[k, off, shape] for off, k, shape in layout]}


def main_rnn():
    import mxnet as mx

    out = {"mxnet_version": mx.__version__,
           "cases": [dict(case, result=rnn_layout(case, mx)) for case in RNN_CASES]}
    with open(os.path.join(HERE, "fused_rnn_layout_golden.json"), "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
    main_rnn()
