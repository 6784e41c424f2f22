"""pick(..., keepdims=True) with the index given without the kept axis, as the word-language
model's loss builds it (MXNet takes the index with or without that axis)."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import ShapeError


@pytest.mark.parametrize("index_shape", [(6,), (6, 1)])
def test_keepdims_pick_binds_and_differentiates(index_shape):
    x, i = mx.sym.var("x"), mx.sym.var("i")
    loss = mx.sym.MakeLoss(-mx.sym.log(mx.sym.pick(x, i, axis=-1, keepdims=True)))
    assert loss.infer_shape(x=(6, 4))[0][1] == (6,)
    rs = np.random.RandomState(0)
    data = rs.uniform(0.1, 1, (6, 4))
    label = rs.randint(0, 4, 6)
    exe = loss.simple_bind(mx.cpu(), x=(6, 4), i=index_shape, grad_req={"x": "write",
                                                                       "i": "null"})
    exe.arg_dict["x"][:] = data
    exe.arg_dict["i"][:] = label.reshape(index_shape)
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, -np.log(data[np.arange(6), label])[:, None], rtol=1e-6)
    exe.backward()
    want = np.zeros((6, 4))
    want[np.arange(6), label] = -1 / data[np.arange(6), label]
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), want, rtol=1e-5)


def test_index_of_another_length_is_refused():
    y = mx.sym.pick(mx.sym.var("x"), mx.sym.var("i"), axis=-1, keepdims=True)
    with pytest.raises(ShapeError, match="index"):
        y.infer_shape(x=(6, 4), i=(7,))
