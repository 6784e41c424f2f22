"""The linalg operators (minimod/ops/linalg.py, linalg_factor.py).

Three layers: NumPy float64 references with finite-difference gradients through the table
harness on every backend (`ctx`); MXNet 1.9.1's own numbers (tests/data/ops/linalg_golden.npz,
written by gen_linalg_golden.py) through a bound executor, forward and backward of every op;
and the contract around them (names, shapes both ways, errors, dtypes, MXNet's conventions).

potrf and syevd read one triangle of A but, like MXNet, give a symmetric gradient (the
gradient with respect to a symmetric A); their finite differences therefore perturb A
symmetrically (`check_symmetric_grad`).
"""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import DTypeError, MXNetError, OpParamError, ShapeError
from minimod.ops.registry import create_op, list_ops

from .harness import Case, check_case, infer, run_backward, run_forward

_RS = np.random.RandomState(5)
GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "ops",
                              "linalg_golden.npz"))
OPS = ("gemm", "gemm2", "potrf", "potri", "trmm", "trsm", "syrk", "gelqf", "syevd",
       "sumlogdiag", "extractdiag", "makediag", "extracttrian", "maketrian", "inverse", "det",
       "slogdet")


def r(*shape):
    return _RS.randn(*shape)


def spd(*shape):
    m = r(*shape)
    return m @ T(m) + shape[-1] * np.eye(shape[-1])


def tri(*shape):
    """Lower triangles well away from singular, with garbage above that the op must ignore."""
    return np.tril(r(*shape), -1) + 2.5 * np.eye(shape[-1]) + 4 * np.triu(r(*shape), 1)


def T(x):
    # a copy, not a view: the harness perturbs inputs through reshape(-1), which must not copy
    return np.ascontiguousarray(np.swapaxes(x, -1, -2))


def sym(x, lower=True):
    t = np.tril(x) if lower else np.triu(x)
    return t + T(np.tril(x, -1) if lower else np.triu(x, 1))


# ----------------------------------------------------------------------------- references

def ref_gemm(ta=False, tb=False, alpha=1.0, beta=1.0, axis=-2):
    def ref(a, b, c=None):
        a, b = np.moveaxis(a, axis, -2), np.moveaxis(b, axis, -2)
        p = alpha * (T(a) if ta else a) @ (T(b) if tb else b)
        if c is not None:
            p = p + beta * np.moveaxis(c, axis, -2)
        return [np.moveaxis(p, -2, axis)]
    return ref


def ref_tri(solve, transpose=False, rightside=False, lower=True, alpha=1.0):
    def ref(a, b):
        t = np.tril(a) if lower else np.triu(a)
        t = T(t) if transpose else t
        if solve:
            t = np.linalg.inv(t)
        return [alpha * (b @ t if rightside else t @ b)]
    return ref


def ref_potri(lower):
    def ref(a):
        t = np.tril(a) if lower else np.triu(a)
        return [np.linalg.inv(t @ T(t) if lower else T(t) @ t)]
    return ref


def ref_gelqf(a):
    """LQ by Householder reflections from the right, signed as LAPACK's dlarfg signs them
    (L_ii = -sign(alpha) * |x|, no reflection where x has nothing beyond alpha), spelled out
    with loops."""
    m, n = a.shape[-2:]
    q, low = np.zeros(a.shape), np.zeros(a.shape[:-1] + (m,))
    for idx in np.ndindex(a.shape[:-2]):
        rest, acc = a[idx].copy(), np.eye(n)
        for i in range(m):
            x = rest[i, i:]
            if not x[1:].any():
                continue
            v = x.copy()
            v[0] += np.copysign(np.linalg.norm(x), x[0])
            v /= np.linalg.norm(v)
            rest[:, i:] -= 2 * np.outer(rest[:, i:] @ v, v)
            acc[:, i:] -= 2 * np.outer(acc[:, i:] @ v, v)
        q[idx], low[idx] = acc.T[:m], np.tril(rest[:, :m])
    return [q, low]


def ref_syevd(a):
    w, v = np.linalg.eigh(sym(a))
    u = T(v).copy()
    for idx in np.ndindex(u.shape[:-1]):
        if u[idx][np.argmax(np.abs(u[idx]))] < 0:
            u[idx] *= -1
    return [u, w]


def ref_diag(offset):
    return lambda a: [np.diagonal(a, offset, -2, -1)]


def ref_makediag(offset):
    def ref(a):
        out = np.stack([np.diagflat(v, offset) for v in a.reshape(-1, a.shape[-1])])
        return [out.reshape(a.shape[:-1] + out.shape[-2:])]
    return ref


def _packed_positions(n, offset, lower):
    """MXNet's packing order, spelled out: lower triangles row by row, upper ones column by
    column."""
    if offset < 0 or (offset == 0 and lower):
        return [(i, j) for i in range(n) for j in range(n) if j - i <= offset]
    return [(i, j) for j in range(n) for i in range(n) if j - i >= offset]


def ref_extracttrian(offset, lower):
    def ref(a):
        pos = _packed_positions(a.shape[-1], offset, lower)
        return [np.stack([a[..., i, j] for i, j in pos], axis=-1)]
    return ref


def ref_maketrian(offset, lower, side):
    def ref(a):
        out = np.zeros(a.shape[:-1] + (side, side))
        for k, (i, j) in enumerate(_packed_positions(side, offset, lower)):
            out[..., i, j] = a[..., k]
        return [out]
    return ref


def scalar_per_matrix(fn):
    return lambda a: [np.reshape(fn(a), a.shape[:-2] or (1,))]


# ----------------------------------------------------------------------------- cases

CASES = [
    Case("_linalg_gemm", dict(alpha=1.5, beta=-0.5), [r(2, 3, 4), r(2, 4, 2), r(2, 3, 2)],
         ref_gemm(alpha=1.5, beta=-0.5), id="gemm"),
    Case("_linalg_gemm", dict(transpose_a=True, transpose_b=True, alpha=0.7, axis=0),
         [r(4, 2, 3), r(2, 2, 4), r(3, 2, 2)], ref_gemm(True, True, 0.7, axis=0),
         id="gemm_t_axis0"),
    Case("_linalg_gemm", dict(transpose_b=True, beta=2.0), [r(3, 4), r(2, 4), r(3, 2)],
         ref_gemm(tb=True, beta=2.0), id="gemm_single"),
    Case("linalg_gemm2", dict(transpose_a=True, alpha=-2.0), [r(2, 4, 3), r(2, 4, 2)],
         ref_gemm(ta=True, alpha=-2.0), id="gemm2"),
    Case("_linalg_gemm2", dict(axis=-3), [r(3, 2, 4), r(4, 2, 3)], ref_gemm(axis=-3),
         id="gemm2_axis"),
    Case("_linalg_syrk", dict(alpha=0.5), [r(2, 3, 4)],
         lambda a: [0.5 * a @ T(a)], id="syrk"),
    Case("_linalg_syrk", dict(transpose=True, alpha=-1.5), [r(2, 3, 2)],
         lambda a: [-1.5 * T(a) @ a], id="syrk_t"),
    Case("_linalg_trmm", dict(alpha=1.3), [tri(2, 3, 3), r(2, 3, 2)],
         ref_tri(False, alpha=1.3), infer_from=[1], id="trmm"),
    Case("_linalg_trmm", dict(transpose=True, rightside=True, lower=False, alpha=-0.6),
         [T(tri(2, 3, 3)), r(2, 2, 3)], ref_tri(False, True, True, False, -0.6),
         infer_from=[1], id="trmm_right_t_upper"),
    Case("_linalg_trsm", dict(alpha=2.0), [tri(2, 3, 3), r(2, 3, 2)], ref_tri(True, alpha=2.0),
         infer_from=[1], id="trsm"),
    Case("_linalg_trsm", dict(transpose=True, rightside=True, alpha=-0.5),
         [tri(2, 3, 3), r(2, 2, 3)], ref_tri(True, True, True, alpha=-0.5), id="trsm_right_t"),
    Case("_linalg_trsm", dict(rightside=True, lower=False), [T(tri(3, 3)), r(2, 3)],
         ref_tri(True, rightside=True, lower=False), id="trsm_right_upper"),
    Case("_linalg_potri", dict(), [tri(2, 3, 3)], ref_potri(True), id="potri"),
    Case("_linalg_potri", dict(lower=False), [T(tri(2, 3, 3))], ref_potri(False),
         id="potri_upper"),
    Case("_linalg_gelqf", dict(), [r(2, 2, 4)], ref_gelqf, id="gelqf"),
    Case("_linalg_gelqf", dict(), [r(3, 3)], ref_gelqf, id="gelqf_square"),
    Case("_linalg_inverse", dict(), [spd(2, 3, 3) + r(2, 3, 3)],
         lambda a: [np.linalg.inv(a)], id="inverse"),
    Case("_linalg_det", dict(), [r(3, 3, 3) + 2 * np.eye(3)],
         scalar_per_matrix(np.linalg.det), id="det"),
    Case("_linalg_det", dict(), [r(3, 3) + 2 * np.eye(3)], scalar_per_matrix(np.linalg.det),
         id="det_single"),
    Case("_linalg_slogdet", dict(), [r(2, 2, 3, 3) + np.eye(3)],
         lambda a: [np.linalg.slogdet(a)[0], np.linalg.slogdet(a)[1]], id="slogdet"),
    Case("_linalg_sumlogdiag", dict(), [spd(2, 3, 3)],
         scalar_per_matrix(lambda a: np.log(np.diagonal(a, 0, -2, -1)).sum(-1)),
         id="sumlogdiag"),
    Case("_linalg_sumlogdiag", dict(), [spd(3, 3)],
         scalar_per_matrix(lambda a: np.log(np.diagonal(a)).sum()), id="sumlogdiag_single"),
    Case("_linalg_extractdiag", dict(offset=-1), [r(2, 4, 4)], ref_diag(-1), id="extractdiag"),
    Case("_linalg_extractdiag", dict(offset=2), [r(4, 4)], ref_diag(2), id="extractdiag_up"),
    Case("_linalg_makediag", dict(offset=2), [r(2, 3)], ref_makediag(2), id="makediag"),
    Case("_linalg_makediag", dict(offset=-1), [r(3)], ref_makediag(-1), id="makediag_single"),
]
for _offset, _lower in [(0, True), (0, False), (1, True), (-2, False)]:
    _side = 4
    _m = _side - abs(_offset)
    CASES += [
        Case("_linalg_extracttrian", dict(offset=_offset, lower=_lower), [r(2, _side, _side)],
             ref_extracttrian(_offset, _lower), id="extracttrian_%d_%s" % (_offset, _lower)),
        Case("_linalg_maketrian", dict(offset=_offset, lower=_lower), [r(2, _m * (_m + 1) // 2)],
             ref_maketrian(_offset, _lower, _side), id="maketrian_%d_%s" % (_offset, _lower)),
    ]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case(case, ctx):
    check_case(case, ctx)


def check_symmetric_grad(op_name, attrs, a, lower=True, eps=1e-6):
    """Backward of an op that reads one triangle of A, against finite differences of
    X -> op(S(X)), S(X) = (X + X^T) / 2, whose gradient is sym(G) for the op's gradient G."""
    op = create_op(op_name, attrs)
    args, aux, outs = run_forward(op, [a])
    heads = [np.random.RandomState(3).uniform(-1, 1, o.shape) for o in outs]
    grad = run_backward(op, args, aux, outs, heads, [0])[0]
    np.testing.assert_allclose(grad, T(grad), rtol=1e-12, atol=1e-12)  # symmetric
    nvis = op.num_visible_outputs()
    num = np.zeros_like(a)
    for k in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[k] = eps
        d = (d + T(d)) / 2
        plus, minus = run_forward(op, [a + d])[2], run_forward(op, [a - d])[2]
        num[k] = sum(np.sum(h * (p - m)) for h, p, m in
                     zip(heads[:nvis], plus[:nvis], minus[:nvis])) / (2 * eps)
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("lower", [True, False])
def test_potrf_forward_reads_one_triangle_and_gradient_is_symmetric(lower):
    a = spd(2, 4, 4)
    noisy = a + (np.triu(r(2, 4, 4), 1) if lower else np.tril(r(2, 4, 4), -1)) * 3
    op = create_op("_linalg_potrf", dict(lower=lower))
    factor = run_forward(op, [noisy])[2][0]
    chol = np.linalg.cholesky(a)
    np.testing.assert_allclose(factor, chol if lower else T(chol), rtol=1e-12, atol=1e-12)
    check_symmetric_grad("_linalg_potrf", dict(lower=lower), a)


def test_syevd_forward_conventions_and_gradient():
    a = sym(spd(2, 4, 4) - 3 * np.eye(4))
    u, w = ref_syevd(a)
    op = create_op("_linalg_syevd", {})
    got_u, got_w = run_forward(op, [a + 5 * np.triu(r(2, 4, 4), 1)])[2]  # reads the lower half
    np.testing.assert_allclose(got_w, w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_u, u, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(T(got_u) @ (w[..., None] * got_u), a, atol=1e-10)
    peak = np.take_along_axis(got_u, np.abs(got_u).argmax(-1)[..., None], -1)
    assert (peak > 0).all()
    check_symmetric_grad("_linalg_syevd", {}, a)


# ----------------------------------------------------------------------------- MXNet numbers

GOLDEN_NAMES = sorted({k.split("/")[0] for k in GOLDEN.files})


def test_golden_file_covers_every_op():
    assert {json.loads(str(GOLDEN[n + "/meta"]))["op"] for n in GOLDEN_NAMES} == set(OPS)


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_mxnet_golden(name):
    """Forward and backward of a bound graph equal MXNet 1.9.1's, all visible outputs with
    head gradients."""
    meta = json.loads(str(GOLDEN[name + "/meta"]))
    inputs = [GOLDEN["%s/in%d" % (name, i)] for i in range(meta["n_in"])]
    names = ["in%d" % i for i in range(len(inputs))]
    out = getattr(mx.sym.linalg, meta["op"])(*[mx.sym.var(n) for n in names], name="op",
                                             **meta["attrs"])
    exe = out.simple_bind(mx.cpu(), type_dict={n: np.float64 for n in names},
                          **{n: a.shape for n, a in zip(names, inputs)})
    for n, a in zip(names, inputs):
        exe.arg_dict[n][:] = a
    outs = exe.forward(is_train=True)
    assert len(outs) == meta["n_out"]
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), GOLDEN["%s/out%d" % (name, i)], rtol=1e-9,
                                   atol=1e-11, err_msg="%s output %d" % (name, i))
    exe.backward([mx.nd.array(GOLDEN["%s/head%d" % (name, i)], dtype="float64")
                  for i in range(meta["n_out"])])
    for i, n in enumerate(names):
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), GOLDEN["%s/grad%d" % (name, i)],
                                   rtol=1e-9, atol=1e-11, err_msg="%s grad %d" % (name, i))


@pytest.mark.parametrize("name", ["gemm", "gelqf", "syevd", "slogdet", "potrf_upper"])
def test_nd_linalg_namespace_matches_golden(name):
    meta = json.loads(str(GOLDEN[name + "/meta"]))
    inputs = [mx.nd.array(GOLDEN["%s/in%d" % (name, i)], dtype="float64")
              for i in range(meta["n_in"])]
    outs = getattr(mx.nd.linalg, meta["op"])(*inputs, **meta["attrs"])
    outs = outs if isinstance(outs, list) else [outs]
    assert len(outs) == meta["n_out"]
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), GOLDEN["%s/out%d" % (name, i)], rtol=1e-9,
                                   atol=1e-11)


# ----------------------------------------------------------------------------- contract

def test_registered_names_and_aliases_are_mxnets():
    ops = list_ops()
    for short in OPS:
        assert "_linalg_" + short in ops
        assert ("linalg_" + short in ops) == (short != "syevd")  # MXNet has no linalg_syevd
        if short != "syevd":
            assert ops["linalg_" + short] is ops["_linalg_" + short]


def test_output_names_and_hidden_outputs_follow_mxnet():
    x = mx.sym.var("x")
    assert mx.sym.linalg.det(x, name="d").list_outputs() == ["d_output0"]
    assert mx.sym.linalg.slogdet(x, name="s").list_outputs() == ["s_output0", "s_output1"]
    assert mx.sym.linalg.gelqf(x, name="g").list_outputs() == ["g_output0", "g_output1"]
    assert mx.sym.linalg.syevd(x, name="e").list_outputs() == ["e_output0", "e_output1"]
    assert mx.sym.linalg.inverse(x, name="i").list_outputs() == ["i_output"]
    # MXNet's JSON counts det's LU and pivot slots: node_row_ptr steps of 3 and 4
    assert json.loads(mx.sym.linalg.det(x).tojson())["node_row_ptr"] == [0, 1, 4]
    assert json.loads(mx.sym.linalg.slogdet(x).tojson())["node_row_ptr"] == [0, 1, 5]
    op = create_op("_linalg_det", {})
    _, types = op.infer_type([np.dtype("float32")], [None] * 3)
    assert [np.dtype(t) for t in types] == [np.float32, np.float32, np.int32]
    _, shapes = infer(op, [(2, 5, 3, 3)])
    assert shapes == [(2, 5), (2, 5, 3, 3), (2, 5, 3)]


@pytest.mark.parametrize("op_name, attrs, given, want_in, want_out", [
    ("_linalg_gemm", {}, [(2, 3, 4), (2, 4, 5), None], [(2, 3, 4), (2, 4, 5), (2, 3, 5)],
     [(2, 3, 5)]),
    ("_linalg_gemm2", dict(axis=0, transpose_b=True), [(3, 2, 4), (5, 2, 4)],
     [(3, 2, 4), (5, 2, 4)], [(3, 2, 5)]),
    ("_linalg_trsm", dict(rightside=True), [None, (2, 3, 5)], [(2, 5, 5), (2, 3, 5)],
     [(2, 3, 5)]),
    ("_linalg_syrk", dict(transpose=True), [(2, 3, 5)], [(2, 3, 5)], [(2, 5, 5)]),
    ("_linalg_gelqf", {}, [(2, 3, 5)], [(2, 3, 5)], [(2, 3, 5), (2, 3, 3)]),
    ("_linalg_syevd", {}, [(3, 3)], [(3, 3)], [(3, 3), (3,)]),
    ("_linalg_sumlogdiag", {}, [(3, 3)], [(3, 3)], [(1,)]),
    ("_linalg_extractdiag", dict(offset=1), [(2, 4, 4)], [(2, 4, 4)], [(2, 3)]),
    ("_linalg_makediag", dict(offset=-2), [(3,)], [(3,)], [(5, 5)]),
    ("_linalg_extracttrian", dict(offset=-2), [(4, 4)], [(4, 4)], [(3,)]),
    ("_linalg_maketrian", dict(offset=1), [(2, 6)], [(2, 6)], [(2, 4, 4)]),
    ("_linalg_potrf", {}, [None], [(2, 4, 4)], [(2, 4, 4)]),
])
def test_shape_inference(op_name, attrs, given, want_in, want_out):
    op = create_op(op_name, attrs)
    out_given = [(2, 4, 4)] if op_name == "_linalg_potrf" else [None] * op.num_outputs()
    in_shapes, out_shapes = list(given), list(out_given)
    for _ in range(2):
        in_shapes, out_shapes = op.infer_shape(in_shapes, out_shapes)
    assert in_shapes == want_in
    assert out_shapes[:op.num_visible_outputs()] == want_out


@pytest.mark.parametrize("op_name, attrs, shapes, words", [
    ("_linalg_gemm2", {}, [(2, 3, 4), (2, 3, 5)], "do not chain"),
    ("_linalg_gemm2", {}, [(2, 3, 4), (1, 4, 5)], "same batch axes"),
    ("_linalg_gemm2", {}, [(3,), (3,)], "matrices"),
    ("_linalg_gemm2", dict(axis=-1), [(3, 3), (3, 3)], "axis=-1"),
    ("_linalg_gemm", {}, [(3, 4), (4, 5), (3, 3)], "(3, 3)"),
    ("_linalg_potrf", {}, [(3, 4)], "square"),
    ("_linalg_det", {}, [(3,)], "square"),
    ("_linalg_trsm", {}, [(2, 4, 4), (2, 3, 5)], "(2, 3, 3)"),
    ("_linalg_gelqf", {}, [(2, 5, 3)], "m <= n"),
    ("_linalg_maketrian", {}, [(7,)], "triangle"),
    ("_linalg_extractdiag", dict(offset=3), [(3, 3)], "offset=3"),
    ("_linalg_extracttrian", dict(offset=-3), [(3, 3)], "offset=-3"),
])
def test_bad_shapes_raise_naming_the_input(op_name, attrs, shapes, words):
    op = create_op(op_name, attrs)
    with pytest.raises(ShapeError) as info:
        infer(op, shapes)
    assert words in str(info.value)


def test_bad_shape_error_names_node_and_op():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    with pytest.raises(ShapeError, match=r"mm \(_linalg_gemm2\).*'A' \(2, 3\)"):
        mx.sym.linalg.gemm2(a, b, name="mm").infer_shape(a=(2, 3), b=(4, 5))


def test_parameters_and_dtypes():
    with pytest.raises(OpParamError, match="takes no parameters"):
        create_op("_linalg_syevd", dict(lower="True"))
    with pytest.raises(OpParamError, match="no parameter 'offset'"):
        create_op("_linalg_gemm", dict(offset="1"))
    assert create_op("_linalg_potrf", {}).attrs.lower is True
    assert create_op("_linalg_gemm", {}).attrs.axis == -2
    op = create_op("_linalg_trsm", dict(transpose="1", alpha="2.5"))
    assert (op.attrs.transpose, op.attrs.rightside, op.attrs.lower, op.attrs.alpha) == (
        True, False, True, 2.5)
    with pytest.raises(DTypeError, match="float32 or float64"):
        create_op("_linalg_gemm2", {}).infer_type([np.dtype("int32"), None], [None])
    with pytest.raises(DTypeError, match="float32 or float64"):
        create_op("_linalg_potrf", {}).infer_type([np.dtype("float16")], [None])


def test_float32_runs_in_float32():
    a = mx.nd.array(spd(2, 3, 3), dtype="float32")
    for fn in (mx.nd.linalg.potrf, mx.nd.linalg.inverse, mx.nd.linalg.det):
        assert fn(a).dtype == np.float32
    u, w = mx.nd.linalg.syevd(a)
    assert u.dtype == w.dtype == np.float32


def test_det_and_slogdet_of_singular_matrices_as_mxnet():
    """MXNet gives det 0, sign 0, log|det| -inf, and a zero gradient for a singular
    matrix; a regular matrix in the same batch keeps its gradient."""
    a = np.stack([np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([[2.0, 1.0], [1.0, 3.0]])])
    x = mx.sym.var("x")
    for sym_, heads in ((mx.sym.linalg.det(x), [np.ones(2)]),
                        (mx.sym.linalg.slogdet(x), [np.ones(2), np.ones(2)])):
        exe = sym_.simple_bind(mx.cpu(), x=a.shape, type_dict={"x": np.float64})
        exe.arg_dict["x"][:] = a
        outs = [o.asnumpy() for o in exe.forward(is_train=True)]
        exe.backward([mx.nd.array(h, dtype="float64") for h in heads])
        grad = exe.grad_dict["x"].asnumpy()
        np.testing.assert_array_equal(grad[0], 0)
        want = np.linalg.inv(a[1]).T * (np.linalg.det(a[1]) if len(outs) == 1 else 1.0)
        np.testing.assert_allclose(grad[1], want, rtol=1e-12)
        if len(outs) == 1:
            np.testing.assert_allclose(outs[0], [0.0, 5.0], atol=1e-15)
        else:
            np.testing.assert_array_equal(outs[0], [0.0, 1.0])
            assert outs[1][0] == -np.inf


def test_inverse_of_singular_matrix_raises():
    with pytest.raises((MXNetError, np.linalg.LinAlgError)):
        mx.nd.linalg.inverse(mx.nd.array([[1.0, 2.0], [2.0, 4.0]], dtype="float64")).asnumpy()
