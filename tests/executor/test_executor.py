"""Executor: bind forms, grad_req, head gradients, reshape, params, monitor, errors."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import BindError, MXNetError, ShapeError


def _expr():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    return (a * 2 + b) / (b + 3) - a ** 2


def _vals():
    rng = np.random.RandomState(0)
    return rng.rand(2, 3).astype(np.float32), rng.rand(2, 3).astype(np.float32)


def test_forward_backward_values():
    av, bv = _vals()
    exe = _expr().simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
    exe.arg_dict["a"][:] = av
    exe.arg_dict["b"][:] = bv
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, (av * 2 + bv) / (bv + 3) - av ** 2, rtol=1e-6)
    head = np.random.RandomState(1).rand(2, 3).astype(np.float32)
    exe.backward(mx.nd.array(head))
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), head * (2 / (bv + 3) - 2 * av),
                               rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["b"].asnumpy(),
                               head * (1 / (bv + 3) - (av * 2 + bv) / (bv + 3) ** 2), rtol=1e-5)


def test_grad_req_add_accumulates_and_null_skips():
    av, bv = _vals()
    exe = _expr().simple_bind(mx.cpu(), grad_req={"a": "add"}, a=(2, 3), b=(2, 3))
    assert exe.grad_dict["b"] is None
    exe.arg_dict["a"][:] = av
    exe.arg_dict["b"][:] = bv
    exe.grad_dict["a"][:] = 0
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), 2 * (2 / (bv + 3) - 2 * av),
                               rtol=1e-5)


def test_grad_req_list_and_bind_with_dicts():
    av, bv = _vals()
    sym = _expr()
    exe = sym.simple_bind(mx.cpu(), grad_req=["null", "write"], a=(2, 3), b=(2, 3))
    assert exe.grad_arrays[0] is None and exe.grad_arrays[1] is not None
    args = {"a": mx.nd.array(av), "b": mx.nd.array(bv)}
    grads = {"a": mx.nd.zeros((2, 3)), "b": mx.nd.zeros((2, 3))}
    exe2 = sym.bind(mx.cpu(), args, args_grad=grads)
    exe2.forward(is_train=True)
    exe2.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(grads["a"].asnumpy(), 2 / (bv + 3) - 2 * av, rtol=1e-5)
    exe3 = sym.bind(mx.cpu(), [mx.nd.array(av), mx.nd.array(bv)])
    np.testing.assert_allclose(exe3.forward()[0].asnumpy(), exe2.outputs[0].asnumpy())


def test_forward_kwargs_and_output_dict():
    av, bv = _vals()
    exe = _expr().simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
    exe.forward(a=mx.nd.array(av), b=bv)
    assert list(exe.output_dict) == ["_minus0_output"] or len(exe.output_dict) == 1
    with pytest.raises(BindError, match="'c' is not an argument"):
        exe.forward(c=av)
    with pytest.raises(BindError, match=r"\(3, 3\)"):
        exe.forward(a=np.zeros((3, 3)))


def test_non_loss_head_needs_out_grads():
    exe = _expr().simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
    exe.forward(is_train=True)
    with pytest.raises(MXNetError, match="head gradient is required"):
        exe.backward()


def test_loss_head_needs_no_out_grads():
    data = mx.sym.Variable("data")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=3, name="fc"),
                               name="softmax")
    exe = net.simple_bind(mx.cpu(), data=(4, 5))
    rng = np.random.RandomState(0)
    x = rng.rand(4, 5).astype(np.float32)
    w = rng.rand(3, 5).astype(np.float32)
    exe.arg_dict["data"][:] = x
    exe.arg_dict["fc_weight"][:] = w
    exe.arg_dict["softmax_label"][:] = [0, 1, 2, 1]
    exe.forward(is_train=True)
    exe.backward()
    logits = x @ w.T
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    onehot = np.eye(3)[[0, 1, 2, 1]]
    np.testing.assert_allclose(exe.grad_dict["fc_weight"].asnumpy(), (p - onehot).T @ x,
                               rtol=1e-5)


def test_forward_backward_equals_forward_then_backward():
    """The training step's one run over both step lists gives the very outputs and
    gradients of forward(is_train=True) then backward(), grad_req 'add' included."""
    data = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=6, name="fc1"),
                            act_type="tanh")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=3, name="fc2"),
                               name="softmax")
    rng = np.random.RandomState(2)
    values = {"data": rng.rand(4, 5), "softmax_label": [0, 2, 1, 2],
              "fc1_weight": rng.rand(6, 5) - 0.5, "fc2_weight": rng.rand(3, 6) - 0.5}
    runs = []
    for fused in (True, False):
        exe = net.simple_bind(mx.cpu(), data=(4, 5), grad_req={
            "data": "null", "softmax_label": "null", "fc1_weight": "add", "fc1_bias": "write",
            "fc2_weight": "write", "fc2_bias": "write"})
        for name, value in values.items():
            exe.arg_dict[name][:] = value
        for _ in range(2):  # twice: 'add' accumulates
            if fused:
                exe.forward_backward()
            else:
                exe.forward(is_train=True)
                exe.backward()
        runs.append([exe.outputs[0].asnumpy()] + [g.asnumpy() for g in exe.grad_arrays
                                                  if g is not None])
    for got, want in zip(*runs):
        assert np.array_equal(got, want)


def test_forward_backward_of_a_non_loss_output_asks_for_its_head_gradient():
    exe = _expr().simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
    with pytest.raises(MXNetError, match="head gradient is required"):
        exe.forward_backward()


def test_copy_params_from_and_errors():
    exe = _expr().simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
    exe.copy_params_from({"a": mx.nd.ones((2, 3))})
    assert exe.arg_dict["a"].asnumpy().sum() == 6
    with pytest.raises(ValueError, match='Find name "zz"'):
        exe.copy_params_from({"zz": mx.nd.ones((2, 3))})
    exe.copy_params_from({"zz": mx.nd.ones((2, 3))}, allow_extra_params=True)
    with pytest.raises(BindError, match="'a'"):
        exe.copy_params_from({"a": mx.nd.ones((3, 3))})


def test_reshape_shares_params_and_checks_unspecified():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    exe = net.simple_bind(mx.cpu(), data=(4, 5))
    exe.arg_dict["fc_weight"][:] = 1.0
    small = exe.reshape(data=(2, 5))
    assert small.arg_dict["fc_weight"] is exe.arg_dict["fc_weight"]
    small.arg_dict["data"][:] = 1.0
    assert small.forward()[0].shape == (2, 3)
    np.testing.assert_allclose(small.outputs[0].asnumpy(), 5.0)
    with pytest.raises(BindError, match="fc_weight"):
        exe.reshape(data=(2, 6))
    with pytest.raises(BindError, match="allow_up_sizing"):
        exe.reshape(partial_shaping=True, data=(4, 6))
    wide = exe.reshape(partial_shaping=True, allow_up_sizing=True, data=(4, 6))
    assert wide.arg_dict["fc_weight"].shape == (3, 6)


def test_monitor_callback_sees_every_output():
    seen = []
    with mx.name.NameManager():
        sym = _expr()
    exe = sym.simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    exe.forward()
    assert ("_mulscalar0_output", (2, 3)) in seen
    assert len(seen) == 6


def test_debug_str_reports_total_line():
    exe = _expr().simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
    lines = exe.debug_str().split("\n")
    assert lines[-3] == "Total 0 MB allocated"
    assert int(lines[-3].split()[1]) == 0
    big = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2000, name="fc")
    big = mx.sym.Activation(big, act_type="relu")
    exe = big.simple_bind(mx.cpu(), data=(1000, 2000))
    assert int(exe.debug_str().split("\n")[-3].split()[1]) >= 7


def test_errors_name_the_culprit():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=10, name="fc1")
    with pytest.raises(ShapeError, match=r"fc1 \(FullyConnected\).*weight.*\(10, 20\).*\(10, 30\)"):
        fc.infer_shape(data=(32, 30), fc1_weight=(10, 20))
    with pytest.raises(mx.base.OpParamError, match="bogus"):
        mx.sym.FullyConnected(data, num_hidden=3, bogus=1)
    # a misspelt name is ignored with a warning, as MXNet ignores it; the missing shape is
    # then the error, naming the argument
    with pytest.warns(UserWarning, match="'dta'"), pytest.raises(ShapeError, match="data"):
        fc.simple_bind(mx.cpu(), dta=(2, 3))
    with pytest.raises(ShapeError, match="data"):
        fc.simple_bind(mx.cpu())
    a = mx.sym.Variable("a", dtype="float16")
    b = mx.sym.Variable("b")
    with pytest.raises(mx.base.DTypeError, match="float16"):
        (a + b).infer_type(b="float32")
    for cls in (ShapeError, BindError, mx.base.OpParamError, mx.base.DTypeError):
        assert issubclass(cls, MXNetError)


class _Fails(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        raise ValueError("boom at run time")


@mx.operator.register("test_executor_fails")
class _FailsProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Fails()


def test_runtime_error_names_the_node():
    """An error raised while a step runs comes back naming the node, its op and the device,
    with the original message."""
    net = mx.sym.Custom(mx.sym.Variable("data"), op_type="test_executor_fails", name="bad")
    exe = net.simple_bind(mx.cpu(), data=(2,))
    with pytest.raises(MXNetError, match=r"while running bad \(Custom\) on cpu\(0\).*boom at "
                                         r"run time"):
        exe.forward()


def test_backward_after_a_sharing_executor_ran_is_refused():
    data = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=3, name="fc"),
                            act_type="tanh")
    a = net.simple_bind(mx.cpu(), data=(4, 5))
    b = net.simple_bind(mx.cpu(), data=(2, 5), shared_exec=a, shared_arg_names=["fc_weight"])
    a.forward(is_train=True)
    b.forward(is_train=True)
    with pytest.raises(MXNetError, match="another executor"):
        a.backward(mx.nd.ones((4, 3)))
    b.backward(mx.nd.ones((2, 3)))  # the last one to run forward may go on
    a.forward(is_train=True)
    a.backward(mx.nd.ones((4, 3)))
