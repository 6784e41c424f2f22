"""mx.operator's legacy NumpyOp / NDArrayOp (adapters over CustomOp), CustomOpProp shapes and
dtypes given as two lists (no aux list), and exceptions raised inside a custom operator
surfacing as MXNetError."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError


class _Scale(mx.operator.NumpyOp):
    """y = 3 x with a two-input signature: a second input `bias` added, and its own
    output name."""

    def list_arguments(self):
        return ["data", "bias"]

    def list_outputs(self):
        return ["scaled"]

    def infer_shape(self, in_shape):
        return [in_shape[0], in_shape[0]], [in_shape[0]]

    def forward(self, in_data, out_data):
        assert isinstance(in_data[0], np.ndarray)
        out_data[0][:] = 3 * in_data[0] + in_data[1]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 3 * out_grad[0]
        in_grad[1][:] = out_grad[0]


def test_default_numpy_op_is_an_identity_in_both_directions():
    x = mx.sym.Variable("X")
    y = mx.operator.NumpyOp().get_symbol(x, name="numpy_op")
    dx = mx.nd.zeros((4,))
    exe = y.bind(mx.cpu(), args=[mx.nd.arange(4)], args_grad={"X": dx})
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [0, 1, 2, 3])
    exe.backward(mx.nd.array([1, 2, 3, 4]))
    np.testing.assert_array_equal(dx.asnumpy(), [1, 2, 3, 4])


def test_numpy_op_with_its_own_slots_and_shapes():
    op = _Scale()
    y = op(mx.sym.Variable("x"), mx.sym.Variable("b"), name="scale")
    # one output is "<name>_output" whatever the op calls it, as in MXNet
    assert y.list_arguments() == ["x", "b"] and y.list_outputs() == ["scale_output"]
    assert y.infer_shape(x=(2, 3))[1] == [(2, 3)]
    x, b = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    grads = {"x": mx.nd.zeros((2, 3)), "b": mx.nd.zeros((2, 3))}
    exe = y.bind(mx.cpu(), args={"x": mx.nd.array(x), "b": mx.nd.array(b)}, args_grad=grads)
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), 3 * x + 1)
    exe.backward(mx.nd.ones((2, 3)) * 2)
    np.testing.assert_allclose(grads["x"].asnumpy(), 6)
    np.testing.assert_allclose(grads["b"].asnumpy(), 2)


class _Double(mx.operator.NDArrayOp):
    def forward(self, in_data, out_data):
        assert isinstance(in_data[0], mx.nd.NDArray)
        out_data[0][:] = in_data[0] * 2

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = out_grad[0] * 2


def test_ndarray_op_sees_ndarrays():
    y = _Double().get_symbol(mx.sym.Variable("x"))
    dx = mx.nd.zeros((3,))
    exe = y.bind(mx.cpu(), args=[mx.nd.ones((3,))], args_grad=[dx])
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((3,)))
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [2, 2, 2])
    np.testing.assert_array_equal(dx.asnumpy(), [2, 2, 2])


class _TwoListsOp(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register("two_lists")
class _TwoListsProp(mx.operator.CustomOpProp):
    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]]          # no aux list, as MXNet accepts

    def infer_type(self, in_type):
        return in_type, [in_type[0]]

    def create_operator(self, ctx, shapes, dtypes):
        return _TwoListsOp()


def test_prop_may_return_two_lists_from_infer_shape_and_infer_type():
    y = mx.sym.Custom(mx.sym.Variable("x"), op_type="two_lists")
    assert y.infer_shape(x=(2, 5))[1] == [(2, 5)]
    assert y.infer_type(x=np.float64)[1] == [np.float64]
    np.testing.assert_array_equal(mx.nd.Custom(mx.nd.zeros((2,)), op_type="two_lists")
                                  .asnumpy(), [1, 1])


class _Failing(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        raise ZeroDivisionError("boom")


@mx.operator.register("failing_forward")
class _FailingProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Failing()


def test_an_exception_in_user_code_is_an_mxnet_error_naming_the_op_type():
    with pytest.raises(MXNetError, match="failing_forward.*forward raised ZeroDivisionError"):
        mx.nd.Custom(mx.nd.zeros((2,)), op_type="failing_forward")
