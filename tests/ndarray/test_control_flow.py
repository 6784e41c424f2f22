"""mx.nd.contrib.foreach / while_loop / cond: the loops and branches of MXNet's imperative
control flow, the nested structures they return (checked against MXNet 1.9.1's on the same
calls), and the refusal of the symbolic while_loop and cond."""
import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError


def test_foreach_stacks_outputs_and_keeps_nested_structure():
    def body(d, s):
        return [d[0] * 2, [d[1] + s[0][0]]], [[s[0][0] + d[1]], s[1] * 3]
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = np.random.RandomState(0).uniform(size=(3, 2)).astype(np.float32)
    outs, states = mx.nd.contrib.foreach(body, [mx.nd.array(x), mx.nd.array(y)],
                                         [[mx.nd.zeros(2)], mx.nd.ones(1)])
    # the layout MXNet 1.9.1 returns for this call: [A, [A]] and [[A], A]
    assert isinstance(outs, list) and len(outs) == 2 and isinstance(outs[1], list)
    assert isinstance(states[0], list) and isinstance(states[1], mx.nd.NDArray)
    np.testing.assert_allclose(outs[0].asnumpy(), x * 2)
    running = np.cumsum(y, axis=0)
    np.testing.assert_allclose(outs[1][0].asnumpy(), np.vstack([y[:1], y[1:] + running[:-1]]),
                               rtol=1e-6)
    np.testing.assert_allclose(states[0][0].asnumpy(), running[-1], rtol=1e-6)
    assert states[1].asnumpy().tolist() == [27.0]


def test_foreach_of_one_array_returns_arrays():
    outs, states = mx.nd.contrib.foreach(lambda d, s: (d + s, s + 1), mx.nd.ones((4, 3)),
                                         mx.nd.zeros(3))
    assert isinstance(outs, mx.nd.NDArray) and outs.shape == (4, 3)
    np.testing.assert_array_equal(outs.asnumpy()[:, 0], [1, 2, 3, 4])
    np.testing.assert_array_equal(states.asnumpy(), [4, 4, 4])


def test_foreach_refusals():
    with pytest.raises(MXNetError, match="differ in length"):
        mx.nd.contrib.foreach(lambda d, s: (d[0], s), [mx.nd.ones((2, 1)), mx.nd.ones((3, 1))],
                              [])
    with pytest.raises(TypeError, match="init_states"):
        mx.nd.contrib.foreach(lambda d, s: (d, s), mx.nd.ones((2, 1)), [3.0])


def test_while_loop_pads_to_max_iterations_with_zeros():
    def func(i, s):
        return [i + s], [i + 1, s + i]
    i0, s0 = mx.nd.array([0], dtype="int64"), mx.nd.array([1], dtype="int64")
    outs, (i, s) = mx.nd.contrib.while_loop(lambda i, s: i <= 5, func, (i0, s0),
                                            max_iterations=10)
    # MXNet's documented example: 1 2 4 7 11 16, then rows MXNet leaves undefined (zeros here)
    assert outs[0].shape == (10, 1) and outs[0].dtype == np.int64
    assert outs[0].asnumpy().ravel().tolist() == [1, 2, 4, 7, 11, 16, 0, 0, 0, 0]
    assert (i.asnumpy().tolist(), s.asnumpy().tolist()) == ([6], [16])


def test_while_loop_edge_cases_match_mxnet():
    outs, v = mx.nd.contrib.while_loop(lambda x: x < 0, lambda x: (x, x + 1), mx.nd.zeros(1),
                                       max_iterations=5)
    assert outs == [] and isinstance(v, mx.nd.NDArray) and v.asnumpy().tolist() == [0.0]
    outs, v = mx.nd.contrib.while_loop(lambda x: x < 9, lambda x: (None, x + 1),
                                       [mx.nd.zeros(1)], max_iterations=4)
    assert outs == [] and isinstance(v, list) and v[0].asnumpy().tolist() == [4.0]
    with pytest.raises(ValueError, match="max_iterations is required"):
        mx.nd.contrib.while_loop(lambda x: x < 1, lambda x: (x, x), mx.nd.zeros(1))
    with pytest.raises(ValueError, match="returned 2 loop variables for 1"):
        mx.nd.contrib.while_loop(lambda x: x < 1, lambda x: (x, [x, x]), mx.nd.zeros(1),
                                 max_iterations=3)
    with pytest.raises(MXNetError, match="must be a scalar"):
        mx.nd.contrib.while_loop(lambda x: x, lambda x: (x, x), mx.nd.ones(2), max_iterations=2)


def test_cond_runs_one_branch():
    ran = []

    def branch(tag, value):
        def run():
            ran.append(tag)
            return [mx.nd.full((2,), value)]
        return run
    out = mx.nd.contrib.cond(mx.nd.array([2]), branch("then", 1.0), branch("else", 0.0))
    assert out[0].asnumpy().tolist() == [1.0, 1.0] and ran == ["then"]
    out = mx.nd.contrib.cond(mx.nd.array([0]), branch("then", 1.0), branch("else", 0.0))
    assert out[0].asnumpy().tolist() == [0.0, 0.0] and ran == ["then", "else"]


@pytest.mark.parametrize("name", ["while_loop", "cond"])
def test_symbolic_while_loop_and_cond_are_served_beside_the_imperative_ones(name):
    """Both namespaces have them (the symbolic ones: tests/symbol/test_while_cond.py)."""
    assert name in dir(mx.sym.contrib) and name in dir(mx.nd.contrib)
    assert getattr(mx.sym.contrib, name) is not getattr(mx.nd.contrib, name)
