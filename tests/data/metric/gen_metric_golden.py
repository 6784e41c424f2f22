"""Record MXNet 1.9.1's metric values for every case in metric_cases.py (run with the MXNet venv).

    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/metric/gen_metric_golden.py
"""
import json
import os
import sys

import mxnet as mx

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import metric_cases  # noqa: E402

golden = {"cases": {name: metric_cases.run_case(mx, case)
                    for name, case in metric_cases.CASES.items()},
          "errors": metric_cases.errors(mx), "mxnet": mx.__version__}
with open(os.path.join(here, "metric_golden.json"), "w") as f:
    json.dump(golden, f, indent=1, sort_keys=True)
print("wrote %d cases with mxnet %s" % (len(golden["cases"]), mx.__version__))

import callback_cases  # noqa: E402

with open(os.path.join(here, "callback_golden.json"), "w") as f:
    json.dump(callback_cases.run_all(mx), f, indent=1, sort_keys=True)
print("wrote callback log lines")
