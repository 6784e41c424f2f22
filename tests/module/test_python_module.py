"""PythonModule and PythonLossModule: a Python loss with grad_func at the end of a
SequentialModule trains exactly like the same network ending in SoftmaxOutput; flags, errors."""
from __future__ import annotations

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError

BATCH, CLASSES = 8, 4
RTOL, ATOL = 1e-5, 1e-6


def _body(data):
    net = mx.sym.FullyConnected(data, num_hidden=10, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh1")
    return mx.sym.FullyConnected(net, num_hidden=CLASSES, name="fc2")


def _params(seed=0):
    rng = np.random.RandomState(seed)
    shapes = {"fc1_weight": (10, 5), "fc1_bias": (10,), "fc2_weight": (CLASSES, 10),
              "fc2_bias": (CLASSES,)}
    return {k: mx.nd.array(rng.uniform(-0.5, 0.5, size=s)) for k, s in sorted(shapes.items())}


def _batches(n=3, seed=1):
    rng = np.random.RandomState(seed)
    return [mx.io.DataBatch([mx.nd.array(rng.uniform(-1, 1, size=(BATCH, 5)))],
                            [mx.nd.array(rng.randint(0, CLASSES, size=(BATCH,)))])
            for _ in range(n)]


def _softmax(scores):
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_ce_grad(scores, labels):
    """d(cross-entropy of softmax)/d(scores): what SoftmaxOutput back-propagates."""
    grad = _softmax(scores.asnumpy().astype(np.float64))
    grad[np.arange(len(grad)), labels.asnumpy().astype(np.int64)] -= 1.0
    return grad


def _ready(mod, inputs_need_grad=True):
    mod.bind(data_shapes=[("data", (BATCH, 5))], label_shapes=[("softmax_label", (BATCH,))],
             inputs_need_grad=inputs_need_grad)
    mod.init_params(arg_params=_params())
    mod.init_optimizer(optimizer="sgd",
                       optimizer_params={"learning_rate": 0.2, "momentum": 0.9, "wd": 1e-3})
    return mod


def _loss_chain(grad_func=softmax_ce_grad, contexts=None, **loss_kwargs):
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(_body(mx.sym.Variable("data")), label_names=None,
                          context=contexts or mx.cpu()))
    seq.add(mx.mod.PythonLossModule(grad_func=grad_func, **loss_kwargs), take_labels=True,
            auto_wiring=True)
    return seq


@pytest.mark.parametrize("contexts", [None, [mx.cpu(0), mx.cpu(1)]], ids=["one", "two_devices"])
def test_python_loss_trains_like_softmax_output(contexts):
    seq = _ready(_loss_chain(contexts=contexts))
    single = _ready(mx.mod.Module(mx.sym.SoftmaxOutput(_body(mx.sym.Variable("data")),
                                                       name="softmax"),
                                  context=contexts or mx.cpu()))
    for i, batch in enumerate(_batches()):
        for mod in (seq, single):
            mod.forward_backward(batch)
        scores = seq.get_outputs()[0].asnumpy()
        np.testing.assert_allclose(_softmax(scores), single.get_outputs()[0].asnumpy(),
                                   rtol=RTOL, atol=ATOL, err_msg="output %d" % i)
        np.testing.assert_allclose(seq.get_input_grads()[0].asnumpy(),
                                   single.get_input_grads()[0].asnumpy(), rtol=RTOL, atol=ATOL,
                                   err_msg="dx %d" % i)
        for mod in (seq, single):
            mod.update()
    seq_args, single_args = seq.get_params()[0], single.get_params()[0]
    for name in single_args:
        np.testing.assert_allclose(seq_args[name].asnumpy(), single_args[name].asnumpy(),
                                   rtol=RTOL, atol=ATOL, err_msg=name)


def test_grad_func_may_return_an_ndarray_and_sees_ndarrays():
    seen = []

    def as_nd(scores, labels):
        seen.append((type(scores), scores.shape, type(labels), labels.shape))
        return mx.nd.array(softmax_ce_grad(scores, labels))

    batch = _batches(1)[0]
    grads = []
    for func in (softmax_ce_grad, as_nd):
        seq = _ready(_loss_chain(func))
        seq.forward_backward(batch)
        grads.append(seq.get_input_grads()[0].asnumpy())
        assert isinstance(seq._modules[1].get_input_grads()[0], mx.nd.NDArray)
    np.testing.assert_array_equal(grads[0], grads[1])
    assert seen == [(mx.nd.NDArray, (BATCH, CLASSES), mx.nd.NDArray, (BATCH,))]


def test_loss_module_names_shapes_and_metric():
    seq = _ready(_loss_chain(name="ce"))
    assert seq.output_names == ["ce_output"]
    assert [tuple(d) for d in seq.output_shapes] == [("ce_output", (BATCH, CLASSES))]
    metric = mx.metric.create("acc")
    batch = _batches(1)[0]
    seq.forward(batch, is_train=False)
    seq.update_metric(metric, batch.label)
    expected = np.mean(seq.get_outputs()[0].asnumpy().argmax(axis=1) == batch.label[0].asnumpy())
    assert metric.num_inst == BATCH and metric.get()[1] == pytest.approx(expected)


def test_inference_needs_no_labels():
    seq = _loss_chain()
    seq.bind(data_shapes=[("data", (BATCH, 5))], for_training=False)
    seq.init_params(arg_params=_params())
    seq.forward(mx.io.DataBatch([mx.nd.ones((BATCH, 5))]))
    assert seq.get_outputs()[0].shape == (BATCH, CLASSES)
    metric = mx.metric.create("acc")
    seq.update_metric(metric, [mx.nd.zeros((BATCH,))])  # bound without labels: nothing to do
    assert metric.num_inst == 0


def test_python_loss_flags_and_no_params():
    loss = mx.mod.PythonLossModule()
    assert loss.data_names == ["data"] and loss.output_names == ["pyloss_output"]
    assert loss.get_params() == ({}, {})
    loss.bind(data_shapes=[("data", (BATCH, CLASSES))],
              label_shapes=[("softmax_label", (BATCH,))])
    assert loss.binded and loss.for_training and not loss.inputs_need_grad
    loss.init_params()
    loss.init_optimizer()
    loss.update()
    assert loss.params_initialized and loss.optimizer_initialized
    assert loss.get_params() == ({}, {})
    loss.install_monitor(object())  # nothing to monitor


class Double(mx.mod.PythonModule):
    """y = 2 x, written in Python."""

    def __init__(self):
        super().__init__(data_names=["x"], label_names=None, output_names=["double_output"])
        self._out = self._grad = None

    def _compute_output_shapes(self):
        return [("double_output", self._data_shapes[0][1])]

    def forward(self, data_batch, is_train=None):
        self._out = data_batch.data[0] * 2

    def get_outputs(self, merge_multi_context=True):
        return [self._out]

    def backward(self, out_grads=None):
        self._grad = out_grads[0] * 2

    def get_input_grads(self, merge_multi_context=True):
        return [self._grad]


def test_python_module_in_the_middle_of_a_chain():
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(_body(mx.sym.Variable("data")), label_names=None))
    seq.add(Double(), auto_wiring=True)
    seq.add(mx.mod.Module(mx.sym.SoftmaxOutput(mx.sym.Variable("s"), name="softmax"),
                          data_names=("s",)), auto_wiring=True, take_labels=True)
    single = mx.mod.Module(mx.sym.SoftmaxOutput(_body(mx.sym.Variable("data")) * 2,
                                                name="softmax"))
    _ready(seq)
    _ready(single)
    assert seq._modules[1].binded
    for batch in _batches():
        for mod in (seq, single):
            mod.forward_backward(batch)
            mod.update()
        np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(),
                                   single.get_outputs()[0].asnumpy(), rtol=RTOL, atol=ATOL)
    for name, value in single.get_params()[0].items():
        np.testing.assert_allclose(seq.get_params()[0][name].asnumpy(), value.asnumpy(),
                                   rtol=RTOL, atol=ATOL, err_msg=name)


def test_python_module_without_output_shapes_is_abstract():
    module = mx.mod.PythonModule(data_names=("data",), label_names=None, output_names=["out"])
    with pytest.raises(NotImplementedError, match="_compute_output_shapes"):
        module.bind(data_shapes=[("data", (2, 3))])
    assert not module.binded


# ---------------------------------------------------------------------------------- errors

def test_constructor_errors():
    with pytest.raises(ValueError, match="one data name"):
        mx.mod.PythonLossModule(data_names=("a", "b"))
    with pytest.raises(ValueError, match="one label name"):
        mx.mod.PythonLossModule(label_names=None)
    with pytest.raises(TypeError, match="callable"):
        mx.mod.PythonLossModule(grad_func=3)
    with pytest.raises(TypeError, match="list of names"):
        mx.mod.PythonModule("data", None, ["out"])


def test_bind_errors():
    loss = mx.mod.PythonLossModule()
    with pytest.raises(ValueError, match="data_names"):
        loss.bind(data_shapes=[("scores", (BATCH, CLASSES))])
    with pytest.raises(ValueError, match="label_names"):
        loss.bind(data_shapes=[("data", (BATCH, CLASSES))], label_shapes=[("y", (BATCH,))])
    with pytest.raises(MXNetError, match="grad_req='write'"):
        loss.bind(data_shapes=[("data", (BATCH, CLASSES))], grad_req="add")
    assert not loss.binded


def test_backward_errors():
    batch = mx.io.DataBatch([mx.nd.ones((BATCH, CLASSES))], [mx.nd.zeros((BATCH,))])
    loss = mx.mod.PythonLossModule()
    loss.bind(data_shapes=[("data", (BATCH, CLASSES))],
              label_shapes=[("softmax_label", (BATCH,))])
    loss.forward(batch)
    with pytest.raises(NotImplementedError, match="grad_func"):
        loss.backward()
    with pytest.raises(MXNetError, match="out_grads"):
        loss.backward(out_grads=[mx.nd.ones((BATCH, CLASSES))])
    with pytest.raises(MXNetError, match="merge_multi_context"):
        loss.get_outputs(merge_multi_context=False)
    with pytest.raises(MXNetError, match="labels"):
        loss.forward(mx.io.DataBatch([mx.nd.ones((BATCH, CLASSES))]), is_train=True)
    with pytest.raises(RuntimeError, match="presliced"):
        loss.update_metric(mx.metric.create("acc"), [batch.label], pre_sliced=True)

    inference = mx.mod.PythonLossModule(grad_func=softmax_ce_grad)
    inference.bind(data_shapes=[("data", (BATCH, CLASSES))], for_training=False)
    inference.forward(batch)
    with pytest.raises(MXNetError, match="for_training"):
        inference.backward()
    with pytest.raises(MXNetError, match="call backward"):
        inference.get_input_grads()
