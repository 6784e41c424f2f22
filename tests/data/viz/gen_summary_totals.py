"""Record MXNet 1.9.1's print_summary tables for LeNet and the MNIST MLP, and every case's
totals, for tests/test_visualization.py (run with the MXNet venv, no other effect):

    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/viz/gen_summary_totals.py

`summary_totals.json` holds, per case with shapes, the "Total params" MXNet's summary prints and
the number of learnable values MXNet's own infer_shape gives for the arguments that are not
inputs (the two differ where MXNet's summary does not count a layer's parameters, e.g.
BatchNorm's moving statistics, which are aux states, or counts from its own rules).
"""
import contextlib
import io
import json
import os
import re
import sys

import mxnet as mx
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import viz_cases  # noqa: E402

totals = {}
for name, (build, kwargs) in sorted(viz_cases.CASES.items()):
    with mx.name.NameManager():
        sym, shape = build(mx)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            mx.viz.print_summary(sym, shape=shape, **kwargs)
    if name in ("lenet", "mlp3"):
        with open(os.path.join(here, "summary_%s.txt" % name), "w") as f:
            f.write(buf.getvalue())
    if shape is None:
        continue
    arg_shapes, _, _ = sym.infer_shape(**shape)
    learnable = sum(int(np.prod(s)) for n, s in zip(sym.list_arguments(), arg_shapes)
                    if n not in shape and not n.endswith("_label"))
    printed = int(re.search(r"Total params: (\d+)", buf.getvalue()).group(1))
    totals[name] = {"summary_total": printed, "learnable_arguments": learnable}
with open(os.path.join(here, "summary_totals.json"), "w") as f:
    json.dump(totals, f, indent=1, sort_keys=True)
print("wrote summary totals for %s with mxnet %s" % (sorted(totals), mx.__version__))
