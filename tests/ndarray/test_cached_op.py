"""mx.nd.CachedOp: a symbol called on NDArrays gives the bound executor's numbers, forward and,
under autograd.record(), backward."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError


def _net():
    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    bn = mx.sym.BatchNorm(conv, fix_gamma=False, name="bn")
    return mx.sym.FullyConnected(mx.sym.Activation(bn, act_type="tanh") * 0.5, num_hidden=3,
                                 name="fc")


def _values(sym, shapes):
    rs = np.random.RandomState(0)
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    names = sym.list_arguments() + sym.list_auxiliary_states()
    values = {n: rs.uniform(0.5, 1.5, s) for n, s in zip(names, arg_shapes + aux_shapes)}
    return values


def test_forward_and_gradients_equal_the_executor(ctx):
    sym = _net()
    values = _values(sym, dict(data=(2, 2, 5, 5)))
    exe = sym.simple_bind(ctx, data=(2, 2, 5, 5))
    for name, v in values.items():
        target = exe.arg_dict[name] if name in exe.arg_dict else exe.aux_dict[name]
        target[:] = v
    exe.forward(is_train=True)
    head = np.random.RandomState(1).randn(*exe.outputs[0].shape)
    exe.backward([mx.nd.array(head, ctx=ctx)])
    arrays = {n: mx.nd.array(v, ctx=ctx) for n, v in values.items()}
    for name in sym.list_arguments():
        arrays[name].attach_grad()
    op = mx.nd.CachedOp(sym, flags=[("static_alloc", True)])
    with mx.autograd.record():
        out = op(*[arrays[n] for n in sym.list_inputs()])
    out.backward(mx.nd.array(head, ctx=ctx))
    np.testing.assert_allclose(out.asnumpy(), exe.outputs[0].asnumpy(), rtol=1e-5)
    for name in sym.list_arguments():
        np.testing.assert_allclose(arrays[name].grad.asnumpy(), exe.grad_dict[name].asnumpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)
    for name in sym.list_auxiliary_states():  # moving statistics updated as in training
        np.testing.assert_allclose(arrays[name].asnumpy(), exe.aux_dict[name].asnumpy(),
                                   rtol=1e-5)


def test_inference_out_and_several_outputs():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    sym = mx.sym.Group([a * b + 1, mx.sym.relu(a - b)])
    op = mx.nd.CachedOp(sym)
    x, y = mx.nd.array([1.0, -2.0]), mx.nd.array([3.0, 4.0])
    first, second = op(x, y)
    assert first.asnumpy().tolist() == [4.0, -7.0]
    assert second.asnumpy().tolist() == [0.0, 0.0]
    targets = [mx.nd.zeros((2,)), mx.nd.zeros((2,))]
    assert op(x, y, out=targets) is targets
    assert targets[0].asnumpy().tolist() == [4.0, -7.0]


def test_bad_calls_are_named():
    sym = mx.sym.var("a") * 2
    with pytest.raises(MXNetError, match="unknown flag 'fast'"):
        mx.nd.CachedOp(sym, flags=[("fast", True)])
    with pytest.raises(MXNetError, match=r"2 inputs given, the symbol takes 1 \(a\)"):
        mx.nd.CachedOp(sym)(mx.nd.ones((1,)), mx.nd.ones((1,)))


def test_a_freed_intermediate_is_a_constant_afterwards():
    w = mx.nd.array([2.0])
    w.attach_grad()
    with mx.autograd.record():
        h = w * 3
        y = h * h
    y.backward()
    assert w.grad.asnumpy().tolist() == [36.0]
    with mx.autograd.record():
        z = h * w  # h's node was freed: h counts as the constant 6
    z.backward()
    assert w.grad.asnumpy().tolist() == [6.0]
