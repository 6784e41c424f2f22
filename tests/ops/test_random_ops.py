"""Random sampling operators (`_random_*`, `_random_*_like`, `_sample_*`, `_shuffle`),
`mx.sym.random` and the added `mx.nd.random` functions.

Samples cannot equal MXNet's (each engine has its own generator), so the checks are: the
nodes MXNet's frontend builds (tests/data/signatures/op_signatures.json, "random_calls"),
moments within five standard errors, reproducibility under mx.random.seed, and use in a
trained graph.
"""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import OpParamError, ShapeError

GOLDEN = json.load(open(os.path.join(os.path.dirname(__file__), "..", "data", "signatures",
                                     "op_signatures.json")))
N = 40000


@pytest.mark.parametrize("call", GOLDEN["random_calls"], ids=lambda c: c["fn"])
def test_mx_sym_random_builds_mxnets_node(call):
    syms = {"x": mx.sym.var("x"), "y": mx.sym.var("y")}
    args = [syms[a] if isinstance(a, str) and a in syms else a for a in call["args"]]
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in call["kwargs"].items()}
    out = getattr(mx.sym.random, call["fn"])(*args, name="node", **kwargs)
    graph = json.loads(out.tojson())
    node = graph["nodes"][-1]
    assert node["op"] == call["node_op"]
    assert node.get("attrs", {}) == call["attrs"]
    assert [graph["nodes"][e[0]]["name"] for e in node["inputs"]] == call["inputs"]
    shapes = out.infer_shape_partial(**{a: (2,) for a in out.list_arguments()})[1]
    assert list(shapes[0]) == call["out_shape"]


# (node, parameters, mean, variance)
MOMENTS = [
    ("_random_uniform", dict(low=-1.0, high=3.0), 1.0, 16 / 12),
    ("_random_normal", dict(loc=1.0, scale=2.0), 1.0, 4.0),
    ("_random_gamma", dict(alpha=2.0, beta=3.0), 6.0, 18.0),
    ("_random_exponential", dict(lam=4.0), 0.25, 1 / 16),
    ("_random_poisson", dict(lam=3.0), 3.0, 3.0),
    ("_random_negative_binomial", dict(k=3.0, p=0.4), 4.5, 11.25),
    ("_random_generalized_negative_binomial", dict(mu=2.0, alpha=0.5), 2.0, 4.0),
    ("_random_generalized_negative_binomial", dict(mu=2.0, alpha=0.0), 2.0, 2.0),
    ("_random_randint", dict(low=0, high=5), 2.0, 2.0),
]


def _moments_ok(samples, mean, var):
    assert abs(samples.mean() - mean) < 5 * np.sqrt(var / samples.size)
    assert abs(samples.var() - var) < 0.05 * var + 1e-3


@pytest.mark.parametrize("op, params, mean, var", MOMENTS, ids=lambda v: str(v)[:40])
def test_random_op_moments(op, params, mean, var, ctx):
    mx.random.seed(7)
    out = getattr(mx.sym, op)(shape=(N,), **params)
    exe = out.simple_bind(ctx)
    samples = exe.forward()[0].asnumpy().astype(np.float64)
    _moments_ok(samples, mean, var)


def test_like_and_sample_forms():
    mx.random.seed(1)
    data = mx.nd.zeros((N,), dtype=np.float64)
    like = mx.nd._internal._random_gamma_like(data, alpha=2.0, beta=3.0)
    assert like.dtype == np.float64 and like.shape == (N,)
    _moments_ok(like.asnumpy(), 6.0, 18.0)
    mu, sigma = mx.nd.array([0.0, 10.0]), mx.nd.array([1.0, 2.0])
    drawn = mx.nd.sample_normal(mu, sigma, shape=(N // 2,)).asnumpy()
    assert drawn.shape == (2, N // 2)
    _moments_ok(drawn[0], 0.0, 1.0)
    _moments_ok(drawn[1], 10.0, 4.0)


def test_seed_reproduces_and_each_forward_draws_anew():
    exe = mx.sym.random.normal(shape=(5,)).simple_bind(mx.cpu())
    mx.random.seed(3)
    first = exe.forward()[0].asnumpy().copy()
    second = exe.forward()[0].asnumpy().copy()
    mx.random.seed(3)
    again = exe.forward()[0].asnumpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)


def test_shuffle_permutes_rows():
    data = np.arange(12, dtype=np.float32).reshape(6, 2)
    exe = mx.sym.random.shuffle(mx.sym.var("x")).simple_bind(mx.cpu(), x=(6, 2))
    exe.arg_dict["x"][:] = data
    out = exe.forward()[0].asnumpy()
    assert sorted(map(tuple, out)) == sorted(map(tuple, data))


def test_noise_in_a_trained_graph_gets_no_gradient():
    data = mx.sym.var("data")
    noisy = data + mx.sym.random.normal(0, 0.01, shape=(8, 3))
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(noisy, num_hidden=1, name="fc"),
                                        name="lro")
    mod = mx.mod.Module(net, label_names=("lro_label",))
    rng = np.random.RandomState(0)
    x = rng.randn(64, 3).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    mod.fit(mx.io.NDArrayIter(x, y, batch_size=8, label_name="lro_label"), num_epoch=20,
            optimizer_params={"learning_rate": 0.1}, initializer=mx.init.Xavier())
    np.testing.assert_allclose(mod.get_params()[0]["fc_weight"].asnumpy(),
                               [[1.0, -2.0, 0.5]], atol=0.05)


def test_nd_random_functions():
    mx.random.seed(5)
    _moments_ok(mx.nd.random.gamma(2, 3, shape=(N,)).asnumpy(), 6.0, 18.0)
    _moments_ok(mx.nd.random.exponential(2, shape=(N,)).asnumpy(), 2.0, 4.0)
    assert mx.nd.random.poisson(3).shape == (1,)
    assert mx.nd.random.randn(2, 3).shape == (2, 3)
    rates = mx.nd.random.poisson(mx.nd.array([1.0, 50.0]), shape=(N,)).asnumpy()
    _moments_ok(rates[1], 50.0, 50.0)
    out = mx.nd.zeros((4,))
    assert mx.nd.random.negative_binomial(3, 0.5, out=out) is out
    like = mx.nd.random.uniform_like(mx.nd.zeros((3, 2)), 5, 6).asnumpy()
    assert like.shape == (3, 2) and ((like >= 5) & (like < 6)).all()


def test_bad_random_calls():
    with pytest.raises(OpParamError, match="high=1 must exceed low=3"):
        mx.sym.random.randint(3, 1, shape=(2,))
    with pytest.raises(TypeError, match="must be all numbers or all Symbols"):
        mx.sym.random.normal(mx.sym.var("x"), 1.0)
    with pytest.raises(ShapeError, match="parameters of _sample_uniform need one shape"):
        mx.sym.random.uniform(mx.sym.var("x"), mx.sym.var("y")).infer_shape(x=(2,), y=(3,))


@pytest.mark.parametrize("call, message", [
    (lambda: mx.nd.random.normal(0, -1, shape=(2,)), r"mx.nd.random.normal: .*scale > 0"),
    (lambda: mx.nd.random.normal(0, 0, shape=(2,)), r"scale > 0, got loc=0, scale=0"),
    (lambda: mx.nd.random.uniform(1, 0, shape=(2,)), r"uniform: .*low <= high"),
    (lambda: mx.nd.random.gamma(1, -1, shape=(2,)), r"_random_gamma: .*beta > 0"),
    (lambda: mx.nd.random.gamma(0, 1, shape=(2,)), r"alpha > 0"),
    (lambda: mx.nd.random.poisson(-1, shape=(2,)), r"lam >= 0"),
    (lambda: mx.nd.random.negative_binomial(-1, 0.5, shape=(2,)), r"k >= 0"),
    (lambda: mx.nd.random.negative_binomial(1, 0, shape=(2,)), r"0 < p <= 1"),
    (lambda: mx.nd.random.generalized_negative_binomial(-1, 1, shape=(2,)), r"mu >= 0"),
    (lambda: mx.nd.random.normal_like(mx.nd.ones(2), scale=-1), r"_random_normal_like"),
    (lambda: mx.sym.random.uniform(2, 1, shape=(2,)), r"operator _random_uniform"),
])
def test_scalar_parameters_outside_their_range_are_refused_as_in_mxnet(call, message):
    """MXNet checks these when the operator runs (the negative binomial's p too here: MXNet
    draws garbage for p = 0)."""
    with pytest.raises(OpParamError, match=message):
        call()


def test_parameters_at_the_edge_of_their_range_draw():
    np.testing.assert_array_equal(mx.nd.random.uniform(1, 1, shape=(3,)).asnumpy(), 1)
    np.testing.assert_array_equal(mx.nd.random.poisson(0, shape=(3,)).asnumpy(), 0)
    np.testing.assert_array_equal(mx.nd.random.negative_binomial(0, 0.5, shape=(3,)).asnumpy(),
                                  0)
