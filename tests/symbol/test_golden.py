"""minimod builds the same symbols as MXNet 1.9.1: JSON text, listings, shapes, types, attrs.

The expected values were recorded from MXNet itself by tests/data/symbol/gen_symbol_golden.py.
Byte-identical JSON is also the proof that MXNet loads what minimod writes.
"""
import json
import os
import sys

import numpy as np
import pytest

import minimod as mx

HERE = os.path.join(os.path.dirname(__file__), "..", "data", "symbol")
sys.path.insert(0, HERE)
import symbol_cases  # noqa: E402

with open(os.path.join(HERE, "golden_symbols.json")) as f:
    GOLDEN = json.load(f)


def _build(name):
    with mx.name.NameManager():
        return symbol_cases.CASES[name](mx)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_same_as_mxnet(name):
    sym, shapes = _build(name)
    got = symbol_cases.describe(mx, sym, shapes)
    want = GOLDEN[name]
    for key in ("arguments", "outputs", "aux", "inputs", "internals", "arg_shapes",
                "out_shapes", "aux_shapes", "types", "attr_dict"):
        assert got[key] == want[key], key
    assert got["json"] == want["json"]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_mxnet_json_loads_and_round_trips(name):
    want = GOLDEN[name]
    sym = mx.sym.load_json(want["json"])
    assert sym.list_arguments() == want["arguments"]
    assert sym.list_outputs() == want["outputs"]
    assert sym.list_auxiliary_states() == want["aux"]
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**want["shapes"])
    assert [list(s) for s in arg_shapes] == want["arg_shapes"]
    assert [list(s) for s in out_shapes] == want["out_shapes"]
    assert sym.tojson() == want["json"]


def test_golden_toy_symbol_file(tmp_path):
    path = os.path.join(os.path.dirname(__file__), "..", "data", "golden", "toy-symbol.json")
    sym = mx.sym.load(path)
    assert sym.list_arguments() == ["data", "fc1_weight", "fc1_bias", "bn1_gamma", "bn1_beta",
                                    "fc2_weight", "fc2_bias", "softmax_label"]
    assert sym.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var"]
    with open(path) as f:
        assert sym.tojson() == f.read()
    out = tmp_path / "again-symbol.json"
    sym.save(str(out))
    assert out.read_text() == open(path).read()
    assert np.array_equal(sym.infer_shape(data=(2, 5))[1][0], (2, 3))
