"""Record MXNet 1.9.1's view of every case in symbol_cases.py (run with the MXNet venv).

    /tmp/mxenv/bin/python tests/data/symbol/gen_symbol_golden.py
"""
import json
import os
import sys

import mxnet as mx

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import symbol_cases  # noqa: E402

golden = {}
for name, build in symbol_cases.CASES.items():
    with mx.name.NameManager():
        sym, shapes = build(mx)
    golden[name] = symbol_cases.describe(mx, sym, shapes)
    golden[name]["shapes"] = {k: list(v) for k, v in shapes.items()}
with open(os.path.join(here, "golden_symbols.json"), "w") as f:
    json.dump(golden, f, indent=1, sort_keys=True)
print("wrote %d cases with mxnet %s" % (len(golden), mx.__version__))
