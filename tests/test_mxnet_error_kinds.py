"""A failure inside an operator surfaces as an MXNetError that is also the builtin kind of
the failure (MXNet's IndexError is an MXNetError too), from mx.nd calls and bound graphs."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError


def test_imperative_index_error_is_both_kinds():
    data = mx.nd.array([[0, 1, 2], [3, 4, 5]])
    with pytest.raises(IndexError) as info:
        mx.nd.gather_nd(data, mx.nd.array([[0, 1, 0], [0, 1, 3]]))
    assert isinstance(info.value, MXNetError) and "gather_nd" in str(info.value)


def test_linear_algebra_failure_is_a_value_error_and_an_mxnet_error():
    with pytest.raises(MXNetError, match="potrf") as info:
        mx.nd.linalg.potrf(mx.nd.array([[1, 2], [2, 1]]))
    assert isinstance(info.value, ValueError)


def test_bound_graph_failure_names_the_node_and_keeps_the_kind():
    x, i = mx.sym.var("x"), mx.sym.var("i")
    exe = mx.sym.gather_nd(x, i, name="g").bind(
        mx.cpu(), {"x": mx.nd.array(np.zeros((2, 3))), "i": mx.nd.array([[0], [7]])})
    with pytest.raises(IndexError, match=r"g \(gather_nd\)") as info:
        exe.forward()
    assert isinstance(info.value, MXNetError)
