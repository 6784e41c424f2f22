"""mx.sym.contrib.while_loop and cond (minimod/symbol/control_flow_masked.py): MXNet's numbers
are checked by the oracle scenario while_cond_bind; here what minimod adds (shape inference,
simple_bind, zero padding, a loop that never runs) and the errors."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError


def _loop(max_iterations=4):
    i, s = mx.sym.var("i"), mx.sym.var("s")
    outs, (count, final) = mx.sym.contrib.while_loop(
        lambda i, s: mx.sym.sum(i) < 3, lambda i, s: (s * 2, [i + 1, s + 1]), [i, s],
        max_iterations=max_iterations)
    return mx.sym.Group([outs, count, final])


@pytest.mark.parametrize("start, steps", [(0, 3), (2, 1), (5, 0)])
def test_the_loop_infers_binds_with_simple_bind_and_pads_with_zeros(start, steps):
    net = _loop()
    assert net.infer_shape(i=(1,), s=(2,))[1] == [(4, 2), (1,), (2,)]
    exe = net.simple_bind(mx.cpu(), i=(1,), s=(2,))
    exe.arg_dict["i"][:] = start
    exe.arg_dict["s"][:] = 1
    exe.forward(is_train=True)
    rows = [np.full(2, 2.0 * (k + 1)) for k in range(steps)] + [np.zeros(2)] * (4 - steps)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.stack(rows))
    np.testing.assert_array_equal(exe.outputs[1].asnumpy(), [start + steps])
    np.testing.assert_array_equal(exe.outputs[2].asnumpy(), np.full(2, 1.0 + steps))
    exe.backward([mx.nd.ones((4, 2)), mx.nd.ones(1), mx.nd.ones(2)])
    np.testing.assert_array_equal(exe.grad_dict["s"].asnumpy(), np.full(2, 1.0 + 2 * steps))


def test_the_loop_stops_for_good_once_cond_fails():
    """A cond that would hold again later does not restart the loop (MXNet's loop ends)."""
    i = mx.sym.var("i")
    outs, final = mx.sym.contrib.while_loop(
        lambda i: mx.sym.abs(i - 2) > 0.5, lambda i: (i * 1, i + 1), i, max_iterations=5)
    exe = mx.sym.Group([outs, final]).bind(mx.cpu(), {"i": mx.nd.zeros(1)})
    exe.forward()
    np.testing.assert_array_equal(exe.outputs[0].asnumpy().ravel(), [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(exe.outputs[1].asnumpy(), [2])


def test_cond_picks_a_branch_and_its_gradient_only():
    x = mx.sym.var("x")
    out = mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: x * 3, lambda: mx.sym.log(x))
    for value, want, grad in ((1.0, 3.0, 3.0), (-1.0, np.nan, 0.0)):
        exe = out.simple_bind(mx.cpu(), x=(2,))
        exe.arg_dict["x"][:] = value
        exe.forward(is_train=True)
        exe.backward(mx.nd.ones(2))
        if value > 0:
            np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [want] * 2)
            np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [grad] * 2)
        else:  # log of a negative number: the else branch's own NaN, and its gradient
            assert np.isnan(exe.outputs[0].asnumpy()).all()
            np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [-1.0, -1.0])


def test_errors_name_the_problem():
    i = mx.sym.var("i")
    with pytest.raises(MXNetError, match="needs max_iterations"):
        mx.sym.contrib.while_loop(lambda i: i < 3, lambda i: (i, i + 1), [i])
    with pytest.raises(MXNetError, match=r"return \(step outputs, new loop_vars\)"):
        mx.sym.contrib.while_loop(lambda i: i < 3, lambda i: i + 1, [i], max_iterations=2)
    with pytest.raises(MXNetError, match="2 loop variables for 1"):
        mx.sym.contrib.while_loop(lambda i: i < 3, lambda i: ([i], [i, i]), [i],
                                  max_iterations=2)
    with pytest.raises(MXNetError, match="then_func gives 2 outputs but else_func 1"):
        mx.sym.contrib.cond(i > 0, lambda: [i, i], lambda: [i])
