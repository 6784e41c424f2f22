"""Sparse arrays where minimod computes densely: bound into executors (the caller's arrays,
kept in step with dense twins), as autograd variables (a dense gradient buffer), in
check_numeric_gradient's grad_stype_dict; and custom operators without inputs."""
import numpy as np
import pytest

import minimod as mx
from minimod.test_utils import check_numeric_gradient

DENSE = np.array([[0, 1.5, 0], [0, 0, 0], [2, 0, -1]], np.float32)


def test_a_bound_sparse_argument_and_gradient_are_the_callers_arrays():
    """As in MXNet, arg_dict / grad_dict hold the arrays given to bind; the executor computes
    on dense twins kept in step with them (tests/executor/test_sparse_binding.py)."""
    x = mx.nd.array(DENSE).tostype("csr")
    grad = mx.nd.zeros((3, 3)).tostype("row_sparse")
    exe = mx.sym.square(mx.sym.var("x")).bind(mx.cpu(), args={"x": x}, args_grad={"x": grad})
    assert exe.arg_dict["x"] is x and exe.grad_dict["x"] is grad
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), DENSE ** 2)
    mx.nd.full((3, 3), 2.0).tostype("csr").copyto(x)  # a write into it reaches the executor
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((3, 3)))
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.full((3, 3), 4.0))
    assert grad.stype == "row_sparse"
    np.testing.assert_array_equal(grad.asnumpy(), np.full((3, 3), 4.0))


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_a_sparse_autograd_variable_gets_a_dense_gradient_of_the_right_values(stype):
    x = mx.nd.array(DENSE).tostype(stype)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.square(x) * 3
    y.backward()
    assert x.grad.stype == "default"
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * DENSE)
    with pytest.raises(mx.MXNetError, match="gradient buffers are dense"):
        x.attach_grad(stype="csr")


def test_numeric_gradient_takes_grad_stype_dict():
    x = mx.nd.array(np.random.RandomState(0).uniform(0.5, 1, (3, 4))).tostype("csr")
    check_numeric_gradient(mx.sym.square(mx.sym.var("x")), [x], grad_stype_dict={"x": "csr"})
    with pytest.raises(ValueError, match="grad_stype_dict\\['x'\\] = 'dense'"):
        check_numeric_gradient(mx.sym.square(mx.sym.var("x")), [x],
                               grad_stype_dict={"x": "dense"})


class _Ones(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.ones(out_data[0].shape))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        pass


@mx.operator.register("minimod_test_ones")
class _OnesProp(mx.operator.CustomOpProp):
    def __init__(self, rows):
        super().__init__()
        self.rows = int(rows)

    def list_arguments(self):
        return []

    def infer_shape(self, in_shape):
        return [], [(self.rows, 2)], []

    def infer_type(self, in_type):
        return [], [np.float32], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Ones()


def test_a_custom_operator_may_have_no_inputs():
    np.testing.assert_array_equal(
        mx.nd.Custom(rows=3, op_type="minimod_test_ones").asnumpy(), np.ones((3, 2)))
    net = mx.sym.Custom(rows=2, op_type="minimod_test_ones") * 2
    exe = net.simple_bind(mx.cpu())
    exe.forward()
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.full((2, 2), 2.0))
