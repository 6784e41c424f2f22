"""add_n's CuPy fast path (minimod/kernels/add_n.py): up to eight terms per kernel, the op's
sums bit for bit. The kernels' bodies run here through the CPU emulation of fused kernels."""
import numpy as np
import pytest

from minimod import backend
from minimod.kernels import add_n
from minimod.ops.binary import AddNOp


@pytest.fixture
def emulated():
    previous = backend.emulate_fused_kernels(True)
    yield
    backend.emulate_fused_kernels(previous)


def _terms(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    # magnitudes far apart, so that another order of addition rounds differently
    return [(rng.standard_normal((5, 7)) * 10.0 ** rng.integers(-4, 5)).astype(dtype)
            for _ in range(n)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("n", [3, 8, 9, 16, 17, 35])
def test_kernels_give_the_ops_sums_bit_for_bit(emulated, n, dtype):
    terms = _terms(n, dtype, seed=n)
    op = AddNOp({"num_args": str(n)})
    want = np.empty_like(terms[0])
    op.forward(np, terms, [], [want], True)
    calls = []
    real = backend.elementwise

    def counting(xp, spec):
        kernel = real(xp, spec)
        return lambda *arrays: (calls.append(spec.name), kernel(*arrays))
    got = np.full_like(terms[0], np.nan)
    backend_elementwise, backend.elementwise = backend.elementwise, counting
    try:
        run = add_n.bind_forward(op, np, terms, [], [got])
    finally:
        backend.elementwise = backend_elementwise
    run(np, True)
    np.testing.assert_array_equal(got, want)
    assert len(calls) == -(-n // add_n.CHUNK)  # ceil(n / 8) kernels
    assert calls[0] == "add_n_%d" % min(n, 8)


def test_output_sharing_the_first_terms_storage(emulated):
    terms = _terms(11, np.float32)
    want = np.empty_like(terms[0])
    AddNOp({"num_args": "11"}).forward(np, terms, [], [want], True)
    add_n.bind_forward(AddNOp({"num_args": "11"}), np, terms, [], [terms[0]])(np, True)
    np.testing.assert_array_equal(terms[0], want)


def test_two_terms_and_numpy_keep_the_ops_own_path():
    terms = _terms(4, np.float32)
    assert add_n.bind_forward(AddNOp({"num_args": "4"}), np, terms, [], [terms[0]]) is None
    previous = backend.emulate_fused_kernels(True)
    try:
        assert add_n.bind_forward(AddNOp({"num_args": "2"}), np, terms[:2], [],
                                  [terms[0]]) is None
    finally:
        backend.emulate_fused_kernels(previous)
