"""Positional arguments of `mx.sym.<op>(...)` follow MXNet's order: inputs, then parameters.

tests/data/signatures/op_signatures.json was written by MXNet 1.9.1 (gen_signatures.py beside
it): every operator's positional order, and symbols MXNet built from positional calls.
"""
import json
import os

import pytest

import minimod as mx
from minimod.ops.registry import call_arguments, get_op_class

GOLDEN = json.load(open(os.path.join(os.path.dirname(__file__), "..", "data", "signatures",
                                     "op_signatures.json")))

# MXNet's make_loss is an op of its own without parameters; minimod's is MakeLoss, which
# takes grad_scale, valid_thresh and normalization after the input as MXNet's MakeLoss does
SUPERSETS = {"make_loss"}


@pytest.mark.parametrize("name", sorted(GOLDEN["ops"]))
def test_positional_order_is_mxnets(name):
    want = GOLDEN["ops"][name]
    cls = get_op_class(name)
    assert cls.VARIADIC_CALL == bool(want.get("variadic"))
    if want.get("variadic"):
        return
    inputs, params = cls.call_signature()
    assert list(inputs) == want["inputs"]
    if name in SUPERSETS:
        assert list(params[:len(want["params"])]) == want["params"]
    else:
        assert list(params) == want["params"]


# what MXNet 1.9.1 offers as Python functions (mx.nd.contrib.isinf ...), which minimod
# registers as operators: no MXNet operator to take the order from
NOT_MXNET_OPERATORS = {"_contrib_isinf", "_contrib_isnan", "_contrib_isfinite",
                       # cumsum's name in MXNet's registry and symbol JSON, which its
                       # frontends offer only as cumsum (that one is in the file)
                       "_np_cumsum",
                       # offered as mx.sym.sparse.retain(data, indices) only
                       "_sparse_retain"}


def test_every_registered_op_is_in_the_golden_file():
    """A new op must get its MXNet order checked (regenerate the golden file)."""
    from minimod.ops.registry import list_ops
    assert set(list_ops()) - NOT_MXNET_OPERATORS <= set(GOLDEN["ops"])


@pytest.mark.parametrize("call", GOLDEN["calls"], ids=lambda c: c["op"])
def test_positional_call_builds_mxnets_node(call):
    syms = {k: mx.sym.var(k) for k in ("x", "w", "b", "y")}
    args = [syms[a] if isinstance(a, str) and a in syms else a for a in call["args"]]
    args = [tuple(a) if isinstance(a, list) else a for a in args]  # JSON made tuples lists
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in call["kwargs"].items()}
    out = getattr(mx.sym, call["op"])(syms["x"], *args, name="node", **kwargs)
    graph = json.loads(out.tojson())
    node = graph["nodes"][-1]
    assert node["op"] == call["node_op"]
    assert node.get("attrs", {}) == call["attrs"]
    assert [graph["nodes"][e[0]]["name"] for e in node["inputs"]] == call["inputs"]


def test_keyword_and_positional_forms_agree():
    x = mx.sym.var("x")
    a = mx.sym.clip(x, 0, 1, name="c")
    b = mx.sym.clip(data=x, a_min=0, a_max=1, name="c")
    assert a.tojson() == b.tojson()


@pytest.mark.parametrize("call, message", [
    (lambda x: mx.sym.clip(x, 0, 1, 2), "clip takes at most 3 positional arguments"),
    (lambda x: mx.sym.clip(x, 0, a_min=1), "clip got multiple values for 'a_min'"),
    (lambda x: mx.sym.clip(x, x), "clip: positional argument 1 is its parameter 'a_min', "
                                  "got Symbol"),
    (lambda x: mx.sym.FullyConnected(x, 10),
     "FullyConnected: positional argument 1 is its input 'weight', got int"),
    (lambda x: mx.sym.Concat(x, 0), "Concat: positional arguments are its inputs, got int"),
])
def test_bad_positional_arguments_name_the_op_and_the_argument(call, message):
    with pytest.raises(TypeError, match=message.replace("(", r"\(")):
        call(mx.sym.var("x"))


def test_lists_of_inputs_count_as_positional_inputs():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    assert call_arguments(get_op_class("Concat"), [[x, y]], {"dim": 0},
                          lambda v: isinstance(v, mx.sym.Symbol)) == ([x, y], {"dim": 0})
    out = mx.sym.FullyConnected([x, y], num_hidden=3, name="fc")
    assert out.list_arguments() == ["x", "y", "fc_bias"]
