"""Operator parameters given as NumPy scalars (common under NumPy 2, whose repr of a scalar is
"np.int64(1)") are stored as the plain numbers MXNet's frontend stores."""
import numpy as np

import minimod as mx


def test_numpy_integers_in_a_tuple_parameter():
    x = mx.sym.var("x")
    y = mx.sym.transpose(x, axes=(np.int64(1), np.int64(0)))
    assert y.list_attr() == {"axes": "(1, 0)"}
    assert y.infer_shape(x=(2, 3))[1] == [(3, 2)]
    pooled = mx.sym.Pooling(x, kernel=[np.int32(2)] * 2, stride=(np.int64(2), 2))
    assert pooled.list_attr()["kernel"] == "(2, 2)" and pooled.list_attr()["stride"] == "(2, 2)"


def test_numpy_scalars_as_single_parameters():
    x = mx.sym.var("x")
    assert mx.sym.clip(x, np.float32(0.1), np.float64(1)).list_attr() == {"a_min": "0.1",
                                                                         "a_max": "1.0"}
    assert mx.sym.sum(x, axis=np.int64(1)).infer_shape(x=(2, 3))[1] == [(2,)]
    out = mx.nd.transpose(mx.nd.ones((2, 3)), axes=[np.int64(1), np.int64(0)])
    assert out.shape == (3, 2)
