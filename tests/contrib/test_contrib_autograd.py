"""mx.contrib.autograd: MXNet 1.9.1's first autograd interface, over the same tape (numbers and
states as MXNet 1.9.1 gives them for these calls)."""
import numpy as np
import pytest

import minimod as mx
from minimod.contrib import autograd as ag


def test_grad_and_loss_and_grad():
    x, y = mx.nd.array([1.0, 2.0, 3.0]), mx.nd.array([2.0, 2.0, 2.0])
    grads, loss = ag.grad_and_loss(lambda a, b: (a * a * b).sum(), argnum=[0, 1])(x, y)
    np.testing.assert_array_equal(grads[0].asnumpy(), [4.0, 8.0, 12.0])
    np.testing.assert_array_equal(grads[1].asnumpy(), [1.0, 4.0, 9.0])
    assert loss.asnumpy().tolist() == [28.0]
    only = ag.grad(lambda a: mx.nd.exp(a).sum())(mx.nd.array([0.0, 1.0]))
    np.testing.assert_allclose(only[0].asnumpy(), [1.0, np.e], rtol=1e-6)
    with pytest.raises(mx.MXNetError, match="argument 0 to differentiate is a float"):
        ag.grad(lambda a: a)(1.0)


def test_sections_switch_recording_and_training_together():
    assert ag.set_is_training(True) is False
    assert mx.autograd.is_recording() and mx.autograd.is_training()
    assert ag.set_is_training(False) is True
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    with ag.train_section():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        with ag.test_section():
            assert not mx.autograd.is_recording() and not mx.autograd.is_training()
        assert mx.autograd.is_recording()
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()


def test_mark_variables_backward_with_head_gradients():
    x = mx.nd.array([1.0, 2.0])
    buf = mx.nd.zeros((2,))
    ag.mark_variables([x], [buf])
    with ag.train_section():
        y = x * x
        z = x * 3
    ag.backward([y, z], [mx.nd.array([1.0, 1.0]), None])
    np.testing.assert_array_equal(buf.asnumpy(), [2 + 3, 4 + 3])
    with pytest.raises(mx.MXNetError, match="outputs must be a list"):
        ag.backward(y)
    with pytest.raises(mx.MXNetError, match="2 outputs but 1 out_grads"):
        ag.backward([y, z], [None])
