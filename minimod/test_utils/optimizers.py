"""Comparing two optimizers (a reference and a fused or multi-tensor one) on the same data."""
from __future__ import annotations

import copy

from ..ndarray import random as nd_random
from .compare import assert_almost_equal, compare_ndarray_tuple
from .data import default_context, rand_ndarray

__all__ = ["compare_optimizer"]


def compare_optimizer(opt1, opt2, shape, dtype, w_stype: str = "default",
                      g_stype: str = "default", rtol: float = 1e-4, atol: float = 1e-5,
                      compare_states: bool = True, ntensors: int = 1) -> None:
    """Assert that `opt1` and `opt2` give the same states and weights after one
    `update_multi_precision` on the same uniform weight and gradient.

    `shape` a tuple: one tensor, index 0. `shape` a list of shapes: `opt2` updates all
    `ntensors` at once (indices 0..n-1, a multi-tensor update), `opt1` one by one.
    `w_stype` / `g_stype` 'row_sparse' or 'csr': `opt2` gets a random sparse weight (every row
    stored) or gradient, `opt1` its dense copy."""
    ctx = default_context()
    if not isinstance(shape, list):
        if ntensors != 1:
            raise ValueError("compare_optimizer: one shape but ntensors=%d" % ntensors)
        w1, w2 = _pair(shape, dtype, w_stype, ctx, density=1)
        g1, g2 = _pair(shape, dtype, g_stype, ctx)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    if w_stype != "default" or g_stype != "default":
        raise ValueError("compare_optimizer: sparse arrays (%s, %s) take one shape, not a list"
                         % (w_stype, g_stype))
    w1, g1 = [], []
    for s in shape:
        w1.append(nd_random.uniform(shape=s, ctx=ctx, dtype=dtype))
        g1.append(nd_random.uniform(shape=s, ctx=ctx, dtype=dtype))
    w2, g2 = copy.deepcopy(tuple(w1)), copy.deepcopy(tuple(g1))
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def _pair(shape, dtype, stype: str, ctx, density=None) -> tuple:
    """(dense copy, array of `stype`) of one random array: uniform when dense, else
    `rand_ndarray`'s sparse data."""
    if stype == "default":
        second = nd_random.uniform(shape=shape, ctx=ctx, dtype=dtype)
        return second.copyto(ctx), second
    second = rand_ndarray(shape, stype, density=density, dtype=dtype)
    return second.copyto(ctx).tostype("default"), second
