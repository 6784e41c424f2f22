"""mx.operator: custom operators written in Python (CustomOp / CustomOpProp / register), the
`Custom` node that runs them, and MXNet 1.9.1's numbers for a training run through two of them
(tests/data/custom/, written by gen_custom_golden.py with MXNet)."""
import json
import os
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError, OpParamError

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "custom")
sys.path.insert(0, HERE)
import custom_cases  # noqa: E402

custom_cases.define(mx)


def test_training_through_custom_ops_matches_mxnet():
    want = np.load(os.path.join(HERE, "custom_golden.npz"))
    got = custom_cases.run(mx)
    assert sorted(got) == sorted(want.files)
    for key in want.files:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6, err_msg=key)


def _mlp(head):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    if head == "custom":
        return mx.sym.Custom(data=net, name="softmax", op_type="np_softmax")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def test_numpy_softmax_head_trains_exactly_like_softmax_output():
    rng = np.random.RandomState(0)
    x = rng.randn(120, 5).astype(np.float32)
    y = ((x[:, 0] > 0).astype(np.float32) + (x[:, 1] > 0)).astype(np.float32)
    params = []
    for head in ("custom", "builtin"):
        mx.random.seed(1)
        mod = mx.mod.Module(_mlp(head))
        mod.fit(mx.io.NDArrayIter(x, y, batch_size=30), num_epoch=3,
                optimizer_params={"learning_rate": 0.1}, initializer=mx.init.Xavier())
        params.append(mod.get_params()[0])
    for name in params[0]:
        np.testing.assert_array_equal(params[0][name].asnumpy(), params[1][name].asnumpy())


def test_slots_parameters_and_json_round_trip():
    x = mx.sym.var("x")
    out = mx.sym.Custom(x, op_type="scaled_tanh", scale=2, name="act")
    assert out.list_outputs() == ["act_output", "act_square"]
    node = json.loads(out.tojson())["nodes"][-1]
    assert node["op"] == "Custom" and node["attrs"] == {"op_type": "scaled_tanh", "scale": "2"}
    again = mx.sym.load_json(out.tojson())
    value = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    for sym in (out, again):
        exe = sym.simple_bind(mx.cpu(), x=(2, 3))
        exe.arg_dict["x"][:] = value
        outs = exe.forward()
        np.testing.assert_allclose(outs[0].asnumpy(), np.tanh(2 * value), rtol=1e-6)
        np.testing.assert_allclose(outs[1].asnumpy(), np.tanh(2 * value) ** 2, rtol=1e-6)


def test_gradient_with_grad_req_add_accumulates():
    x = mx.sym.var("x")
    out = mx.sym.Custom(x, op_type="scaled_tanh", scale=0.5, name="act")[0]
    exe = out.simple_bind(mx.cpu(), x=(2, 3), grad_req="add")
    value = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
    exe.arg_dict["x"][:] = value
    exe.grad_dict["x"][:] = 1.0
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    want = 1.0 + 0.5 * (1 - np.tanh(0.5 * value) ** 2)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), want, rtol=1e-6)


class _Counter(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0])
        if is_train:
            aux[0][:] = aux[0] + 1

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register("counter")
class _CounterProp(mx.operator.CustomOpProp):
    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [(1,)]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Counter()


@mx.operator.register("counter2d")
class _Counter2DProp(_CounterProp):
    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [in_shape[0]]


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_an_imperative_op_updates_a_sparse_aux_state_in_its_storage_type(stype):
    """The op computes on a dense copy of a sparse aux state, written back after it (MXNet
    1.9.1's test_custom_op passes a CSR aux state)."""
    count = mx.nd.zeros((2, 3)).tostype(stype)
    with mx.autograd.train_mode():
        mx.nd.Custom(mx.nd.ones((2, 3)), count, op_type="counter2d")
        mx.nd.Custom(mx.nd.ones((2, 3)), count, op_type="counter2d")
    assert count.stype == stype
    np.testing.assert_array_equal(count.asnumpy(), np.full((2, 3), 2.0))


def test_aux_states_are_updated_by_the_op_and_saved_by_module():
    net = mx.sym.Custom(mx.sym.var("data"), op_type="counter", name="seen")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(net, num_hidden=1, name="fc"),
                                        name="lro")
    assert net.list_auxiliary_states() == ["seen_count"]
    mod = mx.mod.Module(net, label_names=("lro_label",))
    mod.bind(data_shapes=[("data", (4, 2))], label_shapes=[("lro_label", (4, 1))])
    # as in MXNet, the initializer does not know a name ending in "count": give it the value
    mod.init_params(aux_params={"seen_count": mx.nd.zeros((1,))}, allow_missing=True)
    mod.init_optimizer()
    batch = mx.io.DataBatch([mx.nd.ones((4, 2))], [mx.nd.zeros((4, 1))])
    for _ in range(3):
        mod.forward_backward(batch)
        mod.update()
    mod.forward(batch, is_train=False)
    assert mod.get_params()[1]["seen_count"].asnumpy().tolist() == [3.0]


def test_imperative_custom_call_returns_every_output():
    x = mx.nd.array([[0.25, -1.0]])
    out, square = mx.nd.Custom(x, op_type="scaled_tanh", scale=4)
    np.testing.assert_allclose(out.asnumpy(), np.tanh(4 * x.asnumpy()), rtol=1e-6)
    np.testing.assert_allclose(square.asnumpy(), np.tanh(4 * x.asnumpy()) ** 2, rtol=1e-6)


class _Twice(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


@mx.operator.register("twice")
class _TwiceProp(mx.operator.CustomOpProp):
    """Only create_operator: the defaults give one input and one output of its shape."""

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Twice()


def test_prop_defaults_and_one_operator_per_shape():
    x = mx.sym.var("x")
    out = mx.sym.Custom(x, op_type="twice")
    assert out.list_arguments() == ["x"]
    assert out.infer_shape(x=(2, 5))[1] == [(2, 5)]
    assert out.infer_type(x=np.float64)[1] == [np.float64]
    exe = out.simple_bind(mx.cpu(), x=(2, 5))
    exe.arg_dict["x"][:] = 1.5
    assert exe.forward()[0].asnumpy().tolist() == [[3.0] * 5] * 2
    op = next(n.op for n in exe._plan.graph.nodes if n.op is not None and n.op.name == "Custom")
    exe.forward()
    assert len(op._operators) == 1


def test_prop_default_storage_types_are_dense_only():
    prop = _TwiceProp()
    assert prop.infer_storage_type(["default"]) == (["default"], ["default"], [])
    assert prop.infer_storage_type_backward(["default"], ["default"], ["default"], ["default"],
                                            []) == (["default"], ["default"], ["default"],
                                                    ["default"], [])
    with pytest.raises(MXNetError, match=r"_TwiceProp: in_stype\[0\] is 'csr'.*override"):
        prop.infer_storage_type(["csr"])
    with pytest.raises(MXNetError, match=r"ograd_stype\[0\] is 'row_sparse'"):
        prop.infer_storage_type_backward(["row_sparse"], ["default"], ["default"],
                                         ["default"], [])


def test_assign_honours_req():
    op = mx.operator.CustomOp()
    dst = mx.nd.ones((2,))
    op.assign(dst, "add", mx.nd.ones((2,)))
    op.assign(dst, "null", mx.nd.zeros((2,)))
    assert dst.asnumpy().tolist() == [2.0, 2.0]
    op.assign(dst, "inplace", 5)
    assert dst.asnumpy().tolist() == [5.0, 5.0]
    with pytest.raises(MXNetError, match="req must be"):
        op.assign(dst, "overwrite", 1)


def test_errors_name_the_op_type():
    x = mx.sym.var("x")
    with pytest.raises(OpParamError, match="op_type 'nope' is not registered; decorate its "
                                           "CustomOpProp with @mx.operator.register"):
        mx.sym.Custom(x, op_type="nope")
    with pytest.raises(OpParamError, match="required parameter op_type"):
        mx.sym.Custom(x)
    with pytest.raises(OpParamError, match="_TwiceProp.*failed for op_type 'twice'"):
        mx.sym.Custom(x, op_type="twice", scale=3)
    with pytest.raises(TypeError, match="decorates a CustomOpProp subclass"):
        mx.operator.register("bad")(object)
    bad_json = ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "Custom", '
                '"name": "c", "attrs": {"op_type": "missing_type"}, "inputs": [[0, 0, 0]]}], '
                '"arg_nodes": [0], "heads": [[1, 0, 0]]}')
    with pytest.raises(MXNetError, match="missing_type"):
        mx.sym.load_json(bad_json)


class _BadShapeProp(mx.operator.CustomOpProp):
    def infer_shape(self, in_shape):
        raise ValueError("needs 2-D data")

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Twice()


def test_user_infer_shape_failures_are_reported_with_the_op_type():
    mx.operator.register("bad_shape")(_BadShapeProp)
    out = mx.sym.Custom(mx.sym.var("x"), op_type="bad_shape", name="odd")
    with pytest.raises(MXNetError, match="odd.*op_type 'bad_shape': infer_shape.*needs 2-D"):
        out.infer_shape(x=(3,))
    assert "bad_shape" in mx.operator.get_registered()
