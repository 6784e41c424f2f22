"""Concat and Stack of many inputs on CuPy (minimod/kernels/joins.py): one copy per input
into its part of the output, where CuPy's own join of more than eight arrays copies a table
from the host, which no CUDA graph can hold. Runs on a GPU or the CuPy stand-in
(tests/test_fake_gpu.py runs this file on it); the graph side is in
tests/executor/test_graph_coverage.py."""
import numpy as np
import pytest

import minimod as mx
from minimod.kernels import joins

from ..conftest import needs_gpu


def _parts(n, shape, axis, seed=0):
    rng = np.random.default_rng(seed)
    sizes = [1 + (k % 3) for k in range(n)]
    return [rng.standard_normal(shape[:axis] + (s,) + shape[axis + 1:]).astype(np.float32)
            for s in sizes]


@needs_gpu
@pytest.mark.parametrize("n", [3, 9, 14])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_concat_equals_numpy_forward_and_backward(n, dim):
    shape = (2, 3, 4)
    axis = dim % 3
    host = _parts(n, shape, axis, seed=n)
    names = ["x%d" % k for k in range(n)]
    net = mx.sym.Concat(*[mx.sym.Variable(name) for name in names], dim=dim)
    exe = net.simple_bind(mx.gpu(0), **{name: h.shape for name, h in zip(names, host)})
    for name, h in zip(names, host):
        exe.arg_dict[name][:] = h
    bound = [s for s in exe._steps.forward if s.node.op.name == "Concat"][0]
    assert (getattr(bound.run, "__name__", "") == "run_copies") == (n >= joins.MANY)
    got = exe.forward(is_train=True)[0].asnumpy()
    want = np.concatenate(host, axis=axis)
    np.testing.assert_array_equal(got, want)
    head = np.random.default_rng(1).standard_normal(want.shape).astype(np.float32)
    exe.backward([mx.nd.array(head, ctx=mx.gpu(0))])
    for name, g in zip(names, np.split(head, np.cumsum([h.shape[axis] for h in host])[:-1],
                                       axis=axis)):
        np.testing.assert_array_equal(exe.grad_dict[name].asnumpy(), g)


@needs_gpu
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_of_many_equals_numpy(axis):
    host = [np.full((2, 3), k, np.float32) + np.arange(6, dtype=np.float32).reshape(2, 3)
            for k in range(10)]
    names = ["x%d" % k for k in range(10)]
    net = mx.sym.stack(*[mx.sym.Variable(name) for name in names], axis=axis)
    exe = net.simple_bind(mx.gpu(0), grad_req="null", **{name: (2, 3) for name in names})
    for name, h in zip(names, host):
        exe.arg_dict[name][:] = h
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), np.stack(host, axis=axis))
