"""Record MXNet 1.9.1's Monitor output and print_summary tables (run with the MXNet venv).

    MXNET_SUBGRAPH_BACKEND=NONE OMP_NUM_THREADS=1 /tmp/mxenv/bin/python \
        tests/data/viz/gen_viz_golden.py

(MXNET_SUBGRAPH_BACKEND=NONE keeps oneDNN from fusing layers, which would change what the
monitor sees.)
"""
import contextlib
import io
import json
import os
import sys

import mxnet as mx

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import monitor_cases  # noqa: E402
import viz_cases  # noqa: E402

with open(os.path.join(here, "monitor_golden.json"), "w") as f:
    json.dump(monitor_cases.scenarios(mx), f, indent=1, sort_keys=True)
for name, (build, kwargs) in viz_cases.CASES.items():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        sym, shape = build(mx)
        mx.viz.print_summary(sym, shape=shape, **kwargs)
    with open(os.path.join(here, "summary_%s.txt" % name), "w") as f:
        f.write(buf.getvalue())
print("wrote monitor and %d summaries with mxnet %s" % (len(viz_cases.CASES), mx.__version__))
