"""cumsum, khatri_rao, IdentityAttachKLSparseReg and sample_multinomial: MXNet 1.9.1's numbers
through a bound executor (tests/data/ops/more_ops_golden.npz, written by
gen_more_ops_golden.py), NumPy references with finite-difference gradients, the sampler's
frequencies, and errors."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import GraphError, ShapeError

from .harness import Case, check_case

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "ops",
                              "more_ops_golden.npz"))
NAMES = sorted({k.split("/")[0] for k in GOLDEN.files})


def _bind(name):
    meta = json.loads(str(GOLDEN[name + "/meta"]))
    inputs = [GOLDEN["%s/in%d" % (name, i)] for i in range(8) if "%s/in%d" % (name, i)
              in GOLDEN.files]
    names = ["x%d" % i for i in range(len(inputs))]
    sym = getattr(mx.sym, meta["op"])(*[mx.sym.Variable(n) for n in names], name="op",
                                      **meta["attrs"])
    wants_grad = name + "/grad0" in GOLDEN.files
    exe = sym.simple_bind(mx.cpu(), grad_req="write" if wants_grad else "null",
                          type_dict={n: a.dtype for n, a in zip(names, inputs)},
                          **{n: a.shape for n, a in zip(names, inputs)})
    for n, a in zip(names, inputs):
        exe.arg_dict[n][:] = a
    return meta, names, exe, wants_grad


@pytest.mark.parametrize("name", NAMES)
def test_mxnets_numbers(name):
    meta, names, exe, wants_grad = _bind(name)
    if name + "/aux_init" in GOLDEN.files:
        exe.aux_dict["op_moving_avg"][:] = GOLDEN[name + "/aux_init"]
    for step in range(meta["steps"]):
        outs = exe.forward(is_train=True)
        heads = [mx.nd.array(GOLDEN["%s/head%d" % (name, j)],
                             dtype=GOLDEN["%s/head%d" % (name, j)].dtype)
                 for j in range(len(outs))]
        if wants_grad:
            exe.backward(heads)
        if name + "/aux" in GOLDEN.files:
            np.testing.assert_allclose(exe.aux_dict["op_moving_avg"].asnumpy(),
                                       GOLDEN[name + "/aux"][step], rtol=1e-6, atol=1e-7)
    for j, o in enumerate(outs):
        want = GOLDEN["%s/out%d" % (name, j)]
        assert o.dtype == want.dtype and o.shape == want.shape
        np.testing.assert_allclose(o.asnumpy(), want, rtol=1e-5, atol=1e-6)
    if wants_grad:
        for i, n in enumerate(names):
            np.testing.assert_allclose(exe.grad_dict[n].asnumpy(),
                                       GOLDEN["%s/grad%d" % (name, i)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, -3])
def test_cumsum_forward_and_gradient(axis, ctx):
    x = np.random.RandomState(3).randn(3, 4, 2)
    attrs = {} if axis is None else {"axis": axis}
    check_case(Case("cumsum", attrs, [x], lambda a: [np.cumsum(a, axis=axis)],
                    id="cumsum_%s" % axis), ctx)


def test_cumsum_refuses_an_axis_out_of_range():
    with pytest.raises(ShapeError, match="axis=3 is out of range for input 'a' of 3 dims"):
        mx.sym.cumsum(mx.sym.Variable("a"), axis=3).infer_shape(a=(2, 3, 4))


def test_cumsum_is_saved_as_mxnets_op_and_loads_back():
    net = mx.sym.cumsum(mx.sym.Variable("a"), axis=1)
    assert json.loads(net.tojson())["nodes"][1]["op"] == "_np_cumsum"
    again = mx.sym.load_json(net.tojson())
    assert again.infer_shape(a=(2, 5))[1] == [(2, 5)]


def test_khatri_rao_has_no_gradient_and_checks_its_columns():
    net = mx.sym.khatri_rao(mx.sym.Variable("a"), mx.sym.Variable("b"))
    with pytest.raises(ShapeError, match="input 'arg1' has shape \\(3, 2\\).*3 columns"):
        net.infer_shape(a=(2, 3), b=(3, 2))
    with pytest.raises(GraphError, match="non-differentiable"):
        net.simple_bind(mx.cpu(), a=(2, 3), b=(4, 3)).backward(mx.nd.ones((8, 3)))


def test_kl_sparse_reg_on_more_axes_averages_over_all_but_axis_1():
    """MXNet's CPU kernel fails here; the running mean is per unit of axis 1."""
    x = np.random.RandomState(1).uniform(0.1, 0.9, (2, 3, 4)).astype(np.float32)
    net = mx.sym.IdentityAttachKLSparseReg(mx.sym.Variable("data"), momentum=0.5,
                                           sparseness_target=0.3, penalty=1.0, name="kl")
    exe = net.simple_bind(mx.cpu(), data=x.shape)
    exe.arg_dict["data"][:] = x
    exe.aux_dict["kl_moving_avg"][:] = 0.4
    exe.forward(is_train=True)
    head = np.zeros_like(x)
    exe.backward([mx.nd.array(head)])
    avg = 0.5 * 0.4 + 0.5 * x.mean(axis=(0, 2))
    np.testing.assert_allclose(exe.aux_dict["kl_moving_avg"].asnumpy(), avg, rtol=1e-6)
    want = (0.7 / (1 - avg) - 0.3 / avg)[None, :, None] * np.ones_like(x)
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), want, rtol=1e-5)


def test_sample_multinomial_draws_each_class_at_its_rate():
    mx.random.seed(11)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]], np.float32)
    draws = mx.nd.sample_multinomial(mx.nd.array(probs), shape=20000).asnumpy()
    assert draws.shape == (2, 20000) and draws.dtype == np.int32
    freq = np.stack([np.bincount(row, minlength=3) / row.size for row in draws])
    np.testing.assert_allclose(freq, probs, atol=0.015)
    assert (draws[1] != 1).all()  # a class of probability 0 is never drawn


def test_sample_multinomial_gradient_is_the_score_function():
    """With get_prob, d log p[k] / d p = 1 / p[k] at each sampled k, summed over samples."""
    mx.random.seed(5)
    probs = np.array([[0.2, 0.3, 0.5]], np.float32)
    net = mx.sym.sample_multinomial(mx.sym.Variable("p"), shape=(6,), get_prob=True)
    exe = net.simple_bind(mx.cpu(), p=probs.shape)
    exe.arg_dict["p"][:] = probs
    picked, logp = (o.asnumpy() for o in exe.forward(is_train=True))
    np.testing.assert_allclose(logp, np.log(probs[0, picked]), rtol=1e-6)
    head = np.random.RandomState(0).uniform(-1, 1, logp.shape).astype(np.float32)
    exe.backward([mx.nd.zeros(picked.shape), mx.nd.array(head)])
    want = np.zeros_like(probs)
    np.add.at(want[0], picked[0], head[0] / probs[0, picked[0]])
    np.testing.assert_allclose(exe.grad_dict["p"].asnumpy(), want, rtol=1e-5)


def test_random_multinomial_namespaces():
    """mx.nd.random.multinomial, mx.random.multinomial and mx.sym.random.multinomial are
    MXNet's front ends of _sample_multinomial: draws follow the probabilities, get_prob gives
    their log-probabilities, dtype and shape as asked."""
    mx.random.seed(3)
    probs = mx.nd.array([[0.2, 0.8], [0.9, 0.1]])
    draws, logp = mx.nd.random.multinomial(probs, shape=4000, get_prob=True)
    assert draws.shape == (2, 4000) and draws.dtype == np.int32
    share = draws.asnumpy().mean(axis=1)
    np.testing.assert_allclose(share, [0.8, 0.1], atol=0.03)
    np.testing.assert_allclose(logp.asnumpy(), np.log(probs.asnumpy()[
        np.arange(2)[:, None], draws.asnumpy()]), rtol=1e-5)
    assert mx.random.multinomial(probs, shape=(2, 3), dtype="float32").shape == (2, 2, 3)
    net = mx.sym.random.multinomial(mx.sym.var("p"), get_prob=True)
    assert len(net.list_outputs()) == 2
    out = net.bind(mx.cpu(), {"p": probs}).forward()
    assert out[0].shape == (2,) and set(out[0].asnumpy().tolist()) <= {0, 1}
