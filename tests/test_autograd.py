"""mx.autograd: recorded imperative code gives MXNet 1.9.1's gradients (golden scenarios), the
same numbers a bound graph gives, and MXNet's scopes, grad_reqs and refusals."""
import os
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data", "autograd"))
from scenarios import INPUTS, SCENARIOS  # noqa: E402

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "data", "autograd",
                              "autograd_golden.npz"))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_matches_mxnet(name):
    got = SCENARIOS[name](mx, INPUTS[name])
    want = {k.split("/", 1)[1]: GOLDEN[k] for k in GOLDEN.files if k.startswith(name + "/")}
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=2e-5, atol=2e-5,
                                   err_msg="%s/%s" % (name, key))


def test_gradients_equal_the_bound_graph(ctx):
    rs = np.random.RandomState(0)
    x, w, b = rs.randn(8, 5), rs.randn(3, 5), rs.randn(3)
    label = np.array([0, 2, 1, 1, 0, 2, 2, 1], dtype=np.float64)
    data = mx.sym.var("x")
    net = mx.sym.FullyConnected(data, mx.sym.var("w"), mx.sym.var("b"), num_hidden=3, name="fc")
    net = mx.sym.SoftmaxOutput(mx.sym.Activation(net, act_type="sigmoid"), mx.sym.var("label"))
    exe = net.simple_bind(ctx, x=x.shape, w=w.shape, b=b.shape, label=label.shape)
    for k, v in dict(x=x, w=w, b=b, label=label).items():
        exe.arg_dict[k][:] = v
    exe.forward(is_train=True)
    exe.backward()
    arrays = {k: mx.nd.array(v, ctx=ctx) for k, v in dict(x=x, w=w, b=b, label=label).items()}
    for k in ("x", "w", "b"):
        arrays[k].attach_grad()
    with mx.autograd.record():
        fc = mx.nd.FullyConnected(arrays["x"], arrays["w"], arrays["b"], num_hidden=3)
        out = mx.nd.SoftmaxOutput(mx.nd.Activation(fc, act_type="sigmoid"), arrays["label"])
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), exe.outputs[0].asnumpy(), rtol=1e-6)
    for k in ("x", "w", "b"):
        assert arrays[k].grad.context == ctx
        np.testing.assert_allclose(arrays[k].grad.asnumpy(), exe.grad_dict[k].asnumpy(),
                                   rtol=1e-5, atol=1e-7)


# the routines recorded through their operators: each gradient against finite differences
ROUTINES = {
    "exp": lambda x: mx.nd.exp(x), "log": lambda x: mx.nd.log(x.abs() + 1),
    "sqrt": lambda x: mx.nd.sqrt(x.abs() + 1), "square": lambda x: mx.nd.square(x),
    "sigmoid": lambda x: x.sigmoid(), "tanh": lambda x: x.tanh(), "relu": lambda x: x.relu(),
    "reciprocal": lambda x: mx.nd.reciprocal(x + 5), "rsqrt": lambda x: mx.nd.rsqrt(x + 5),
    "sin": lambda x: mx.nd.sin(x), "cos": lambda x: mx.nd.cos(x),
    "log1p": lambda x: mx.nd.log1p(x + 3), "expm1": lambda x: mx.nd.expm1(x),
    "negative": lambda x: -x, "clip": lambda x: mx.nd.clip(x, -0.5, 0.5),
    "softmax": lambda x: mx.nd.softmax(x, axis=1) * x,
    "log_softmax": lambda x: mx.nd.log_softmax(x) * x,
    "smooth_l1": lambda x: mx.nd.smooth_l1(x, scalar=2.0),
    "add_n": lambda x: mx.nd.add_n(x, x * x, x),
    "cast": lambda x: mx.nd.cast(x * x, dtype="float64"),
    "pick": lambda x: mx.nd.pick(x, mx.nd.array([0, 2, 1], dtype="float64"), axis=1),
    "take": lambda x: mx.nd.take(x, mx.nd.array([2, 0, 2], dtype="float64")),
    "where": lambda x: mx.nd.where(x > 0, x * x, x * 3),
    "dot": lambda x: mx.nd.dot(x, x, transpose_b=True),
    "batch_dot": lambda x: mx.nd.batch_dot(x.reshape((3, 2, 2)), x.reshape((3, 2, 2))),
    "sum": lambda x: x.sum(axis=1) * x.sum(), "mean": lambda x: mx.nd.mean(x, axis=0),
    "prod": lambda x: mx.nd.prod(x, axis=1), "nansum": lambda x: mx.nd.nansum(x * x),
    "norm": lambda x: mx.nd.norm(x), "min": lambda x: x.min(axis=0),
    "concat": lambda x: mx.nd.concat([x, x * x], dim=0),
    "slice_axis": lambda x: mx.nd.slice_axis(x, axis=1, begin=1, end=3),
    "tile": lambda x: mx.nd.tile(x, reps=(2, 1)), "repeat": lambda x: x.repeat(2, axis=0),
    "flip": lambda x: mx.nd.flip(x * x, axis=1), "swapaxes": lambda x: x.swapaxes(0, 1) * x.T,
    "squeeze": lambda x: mx.nd.squeeze(x.reshape((1, 3, 4)) * 2),
    "moveaxis": lambda x: mx.nd.moveaxis(x.reshape((3, 2, 2)), 0, 2) ** 2,
    "astype": lambda x: (x * x).astype("float64").copy(),
    "getitem": lambda x: x[mx.nd.array([[0, 0], [2, 1]])] * x[1:, 1:3].sum(),
    "scalar_arith": lambda x: ((2 - x) / 3 + 1 / (x + 4) + x % 1.5 + 2 ** x - x.abs()),
    "arith": lambda x: mx.nd.maximum(x, x * x) + mx.nd.minimum(x, 0.2) + x / (x * x + 1),
}


@pytest.mark.parametrize("name", sorted(ROUTINES))
def test_recorded_routine_gradient(name):
    fn = ROUTINES[name]
    base = np.random.RandomState(3).uniform(-1, 1, (3, 4))
    x = mx.nd.array(base, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = fn(x)
    head = np.random.RandomState(4).randn(*y.shape)
    y.backward(mx.nd.array(head, dtype="float64"))
    eps, numeric = 1e-6, np.zeros_like(base)
    for i in np.ndindex(base.shape):
        plus, minus = base.copy(), base.copy()
        plus[i] += eps
        minus[i] -= eps
        f_plus = (fn(mx.nd.array(plus, dtype="float64")).asnumpy() * head).sum()
        f_minus = (fn(mx.nd.array(minus, dtype="float64")).asnumpy() * head).sum()
        numeric[i] = (f_plus - f_minus) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-5, atol=1e-6)


def test_scopes_and_training_mode():
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    x = mx.nd.ones((200, 50))
    assert (mx.nd.Dropout(x, p=0.5).asnumpy() == 1).all()  # inference: identity
    with mx.autograd.record():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        dropped = mx.nd.Dropout(x, p=0.5).asnumpy()
        with mx.autograd.pause():
            assert not mx.autograd.is_recording() and not mx.autograd.is_training()
        with mx.autograd.predict_mode():
            assert mx.autograd.is_recording() and not mx.autograd.is_training()
    assert set(np.unique(dropped)) == {0.0, 2.0} and 0.4 < (dropped == 0).mean() < 0.6
    with mx.autograd.record(train_mode=False):
        assert not mx.autograd.is_training()
    with mx.autograd.train_mode():
        assert mx.autograd.is_training() and not mx.autograd.is_recording()
    assert mx.autograd.set_recording(True) is False
    assert mx.autograd.set_recording(False) is True
    assert not mx.autograd.is_recording()


def test_dropout_gradient_uses_the_forward_mask(ctx):
    x = mx.nd.ones((100, 40), ctx=ctx)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=0.3)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), y.asnumpy())


def test_grad_reqs_and_unreached_variables():
    a, b, c = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0]), mx.nd.array([5.0])
    a.attach_grad()
    b.attach_grad(grad_req="null")
    buf = mx.nd.array([7.0])
    mx.autograd.mark_variables([c], [buf], "add")
    with mx.autograd.record():
        y = (a * b).sum() + c * c
    y.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), [3.0, 3.0])
    np.testing.assert_array_equal(b.grad.asnumpy(), [0.0])  # 'null': left alone
    np.testing.assert_array_equal(buf.asnumpy(), [17.0])  # 'add': 7 + 2 * 5
    assert c.grad is buf
    d = mx.nd.array([1.0])
    d.attach_grad()
    with mx.autograd.record():
        z = a * 2
    with pytest.raises(MXNetError, match="variable 0 .* the heads do not depend on it"):
        mx.autograd.grad(z, [d])
    assert mx.autograd.grad(z, [a])[0].asnumpy().tolist() == [2.0, 2.0]  # graph kept


def test_function_and_detach(ctx):
    class Sigmoid(mx.autograd.Function):
        def forward(self, x):
            y = 1 / (1 + mx.nd.exp(-x))
            self.save_for_backward(y)
            return y

        def backward(self, dy):
            y, = self.saved_tensors
            return dy * y * (1 - y)

    x = mx.nd.array([[-1.0, 0.0, 2.0]], ctx=ctx)
    x.attach_grad()
    with mx.autograd.record():
        y = Sigmoid()(x) * 3 + x.detach() * 100
    y.backward()
    s = 1 / (1 + np.exp(-x.asnumpy()))
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * s * (1 - s), rtol=1e-6)


def test_get_symbol_computes_the_recorded_graph():
    x = mx.nd.array([[1.0, -2.0], [0.5, 3.0]])
    x.attach_grad()
    w = mx.nd.array([[0.5, 1.0], [-1.0, 2.0], [0.0, 1.0]])
    with mx.autograd.record():
        y = mx.nd.relu(mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=3)) * 2
    sym = mx.autograd.get_symbol(y)
    assert sym.list_arguments() == ["var0", "const0"]
    exe = sym.bind(mx.cpu(), {"var0": x, "const0": w})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), y.asnumpy())
    with mx.autograd.record():
        z = x[0] * 2
    with pytest.raises(MXNetError, match="getitem has no operator"):
        mx.autograd.get_symbol(z)


def test_refusals_name_the_fault():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
        with pytest.raises(MXNetError, match="Inplace operations"):
            y += 1
        with pytest.raises(MXNetError, match="Inplace operations"):
            y[0] = 5
        z = y.exp()
    z.backward()
    with pytest.raises(MXNetError, match="freed by an earlier backward.*retain_graph"):
        z.backward()
    with pytest.raises(MXNetError, match="head 0 .* was not computed"):
        mx.nd.ones((2,)).backward()
    with mx.autograd.record():
        z = x * 2
    with pytest.raises(MXNetError, match=r"head gradient 0 has shape \(3,\) but its head"):
        z.backward(mx.nd.ones((3,)))
    with pytest.raises(NotImplementedError, match="higher-order"):
        mx.autograd.grad(z, [x], create_graph=True)
    with pytest.raises(MXNetError, match="not marked"):
        mx.autograd.grad(z, [mx.nd.ones((2,))])
    with pytest.raises(MXNetError, match="storage type 'row_sparse'"):
        x.attach_grad(stype="row_sparse")
    with pytest.raises(MXNetError, match="grad_req must be one of"):
        x.attach_grad(grad_req="sum")
    with pytest.raises(MXNetError, match=r"gradient 0 has shape \(3,\)"):
        mx.autograd.mark_variables([x], [mx.nd.zeros((3,))])


def test_nothing_is_recorded_outside_record():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    y = x * 2 + mx.nd.exp(x)
    assert y._ag is None and y.grad is None
    x[:] = 3  # a write outside record() is allowed
    assert x.asnumpy().tolist() == [3.0, 3.0]


def test_backward_releases_the_recorded_arrays():
    import gc
    import weakref
    x = mx.nd.ones((50, 50))
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
        z = (y * y).sum()
    held = weakref.ref(y._data)
    z.backward(retain_graph=True)
    del y
    gc.collect()
    assert held() is not None  # the retained graph still holds what backward reads
    z.backward()
    gc.collect()
    assert held() is None  # freed with the graph


def test_a_whole_copy_joins_the_tape_and_a_write_into_it_is_refused():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    z, w = mx.nd.zeros((2,)), mx.nd.zeros((2,))
    with mx.autograd.record():
        y = x * 2
        y.copyto(z)
        w[...] = y * y
        out = (z * 3).sum() + w.sum()
        with pytest.raises(MXNetError, match="Inplace operations"):
            y.copyto(z)  # z is on the tape now
    out.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [6 + 8, 6 + 16])


def test_gradient_buffers_are_written_in_place_and_shared_readers_summed():
    w, v = mx.nd.array([[1.0, 2.0], [3.0, 4.0]]), mx.nd.array([0.5, -1.0])
    w.attach_grad()
    v.attach_grad()
    w.grad[:] = 99  # overwritten, not added to ('write')
    buffer_w, buffer_v = w.grad, v.grad
    with mx.autograd.record():
        # w is read once (straight into its buffer), v twice (the two reads are summed)
        y = mx.nd.dot(w, v) * v
    y.backward(mx.nd.array([1.0, 2.0]))
    assert w.grad is buffer_w and v.grad is buffer_v
    # y_i = (w v)_i v_i: dw_ij = g_i v_i v_j, dv_j = sum_i g_i w_ij v_i + g_j (w v)_j
    np.testing.assert_allclose(w.grad.asnumpy(), [[0.25, -0.5], [-1.0, 2.0]])
    np.testing.assert_allclose(v.grad.asnumpy(), [-7.0, -12.0])


def test_gradients_through_imperative_control_flow_and_custom_ops():
    def step(data, states):
        s = states[0] * 0.5 + data
        return s, [s]
    d = mx.nd.array(np.arange(6).reshape(3, 2))
    d.attach_grad()
    with mx.autograd.record():
        outs, final = mx.nd.contrib.foreach(step, d, [mx.nd.zeros((2,))])
        (outs.sum() + final[0].sum()).backward()
    # s1 = d0, s2 = d0/2 + d1, s3 = d0/4 + d1/2 + d2; the sum of outs plus s3 again
    np.testing.assert_allclose(d.grad.asnumpy(), [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]])
    i = mx.nd.array([1.0])
    i.attach_grad()
    with mx.autograd.record():
        _, last = mx.nd.contrib.while_loop(lambda v: v < 10, lambda v: (v, v * 2), [i],
                                           max_iterations=10)
    last[0].backward()  # 1 -> 16 by four doublings
    assert i.grad.asnumpy().tolist() == [16.0]

    class Cube(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] ** 3)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], 3 * in_data[0] ** 2 * out_grad[0])

    @mx.operator.register("autograd_cube")
    class CubeProp(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, in_shape, []

        def create_operator(self, ctx, shapes, dtypes):
            return Cube()

    x = mx.nd.array([1.0, -2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="autograd_cube") * 2
    y.backward()
    assert x.grad.asnumpy().tolist() == [6.0, 24.0]


def test_fresh_grad_says_whether_a_backward_wrote_the_gradient():
    """MXNet's private `_fresh_grad` (its Gluon trainer reads it to spot stale gradients)."""
    x = mx.nd.ones((2,))
    x.attach_grad()
    assert not x._fresh_grad
    with mx.autograd.record():
        y = x * 2
    y.backward()
    assert x._fresh_grad
    x._fresh_grad = False
    assert not x._fresh_grad
    x.attach_grad()  # marked again: not fresh
    assert not x._fresh_grad
    assert not mx.nd.ones(1)._fresh_grad  # no variable
    z = mx.nd.ones((2,))
    z.attach_grad(grad_req="null")
    with mx.autograd.record():
        w = z * 2
    w.backward()
    assert not z._fresh_grad  # grad_req 'null' writes nothing
