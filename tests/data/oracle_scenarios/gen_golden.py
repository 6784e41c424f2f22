"""Write golden/<name>.npz for differential scenarios by running them under MXNet 1.9.1.

Usage: python tests/data/oracle_scenarios/gen_golden.py [NAME ...]   (default: every scenario)

A scenario is a file NAME.py in this folder defining `run(mx) -> dict` (see README.md here);
`common.py`, this script and files starting with `_` are not scenarios. Whatever Python runs
this script, the scenarios run under MXNet's interpreter ($MXNET_PY, default
/tmp/mxenv/bin/python, made by ../shared/oracle/run.sh) with one OpenMP thread, each in a fresh
temporary directory. Results are stored as the oracle stores them: numbers as float64 arrays,
strings as string arrays.
"""
import importlib
import importlib.util
import logging
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
NOT_SCENARIOS = {"common", "gen_golden"}


def scenario_names() -> list:
    """Every scenario in this folder, sorted."""
    return sorted(f[:-3] for f in os.listdir(HERE)
                  if f.endswith(".py") and not f.startswith("_") and f[:-3] not in NOT_SCENARIOS)


def load_scenario(name: str):
    """Import NAME.py from this folder (with this folder importable, for `common`)."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    spec = importlib.util.spec_from_file_location("oracle_scenario_" + name,
                                                  os.path.join(HERE, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def as_arrays(result: dict) -> dict:
    """The oracle's storage form: strings as string arrays, everything else float64."""
    return {k: np.array(v) if isinstance(v, str) else np.asarray(v, dtype=np.float64)
            for k, v in result.items()}


def run_scenario(mx, name: str) -> dict:
    """run(mx) of one scenario in a fresh temporary directory, in the oracle's storage form."""
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            return as_arrays(load_scenario(name).run(mx))
        finally:
            os.chdir(cwd)


def _generate(names: list) -> None:
    logging.basicConfig(level=logging.WARNING)
    mx = importlib.import_module("mxnet")
    os.makedirs(GOLDEN, exist_ok=True)
    for name in names:
        arrays = run_scenario(mx, name)
        path = os.path.join(GOLDEN, name + ".npz")
        np.savez(path, **arrays)
        print("mxnet %s %s: %d results -> %s" % (mx.__version__, name, len(arrays), path))


def main() -> None:
    names = sys.argv[1:] or scenario_names()
    unknown = [n for n in names if n not in scenario_names()]
    if unknown:
        sys.exit("gen_golden: no scenario %s in %s" % (", ".join(unknown), HERE))
    has_mxnet = importlib.util.find_spec("mxnet") is not None
    if has_mxnet and os.environ.get("OMP_NUM_THREADS") == "1":
        _generate(names)
        return
    python = sys.executable if has_mxnet else os.environ.get("MXNET_PY", "/tmp/mxenv/bin/python")
    if not os.path.exists(python):
        sys.exit("gen_golden: mxnet is not importable here and %s does not exist; run "
                 "../shared/oracle/run.sh once to make the MXNet venv" % python)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    sys.exit(subprocess.call([python, os.path.abspath(__file__)] + names, env=env))


if __name__ == "__main__":
    main()
