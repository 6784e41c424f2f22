"""Every differential scenario in tests/data/oracle_scenarios, run under minimod, must give the
results MXNet 1.9.1 gave (golden/NAME.npz, written by gen_golden.py there).

Same keys, same shapes, values within rtol 2e-4 / atol 2e-5 (the oracle's tolerances), strings
equal. New scenarios are picked up by dropping NAME.py and its golden file into the folder.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import minimod

FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                      "oracle_scenarios")
RTOL, ATOL = 2e-4, 2e-5


def _gen_golden():
    spec = importlib.util.spec_from_file_location("oracle_gen_golden",
                                                  os.path.join(FOLDER, "gen_golden.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _gen_golden()


def _problems(ref: dict, got: dict) -> list:
    problems = []
    for key in sorted(set(ref) | set(got)):
        if key not in got:
            problems.append("missing %s" % key)
        elif key not in ref:
            problems.append("unexpected %s (regenerate the golden file?)" % key)
        else:
            a, b = ref[key], got[key]
            if a.dtype.kind in "US" or b.dtype.kind in "US":
                if a.dtype.kind != b.dtype.kind or str(a) != str(b):
                    problems.append("%s: %r != MXNet's %r" % (key, str(b)[:80], str(a)[:80]))
            elif a.shape != b.shape:
                problems.append("%s: shape %s != MXNet's %s" % (key, b.shape, a.shape))
            elif not np.allclose(b, a, rtol=RTOL, atol=ATOL):
                err = np.max(np.abs(a - b))
                problems.append("%s: max abs err %.3g" % (key, err))
    return problems


def test_there_are_scenarios():
    assert GEN.scenario_names(), "no scenario found in %s" % FOLDER


@pytest.mark.parametrize("name", GEN.scenario_names())
def test_scenario_matches_mxnet(name):
    golden = os.path.join(FOLDER, "golden", name + ".npz")
    if not os.path.exists(golden):
        pytest.fail("no golden file for scenario %s: run `python %s %s` and commit %s"
                    % (name, os.path.join(FOLDER, "gen_golden.py"), name, golden))
    with np.load(golden) as data:
        ref = {key: data[key] for key in data.files}
    # a scenario runs in a process of its own under the oracle; a fresh name manager gives
    # it the same automatic names (fullyconnected0 ...) after the other tests built symbols
    with minimod.name.NameManager():
        got = GEN.run_scenario(minimod, name)
    problems = _problems(ref, got)
    assert not problems, "%s differs from MXNet 1.9.1 in %d results: %s" % (
        name, len(problems), "; ".join(problems[:8]))
