"""The optimizer kernels of minimod/ndarray/update_kernels*.py beyond those the optimizers run
(`mx.nd.ftml_update`, `mx.nd.multi_sgd_mom_update`, `mx.nd.contrib.adamw_update` ...) against
MXNet 1.9.1 running the same calls (tests/data/optimizer/kernels_golden.npz, written by
gen_kernels_golden.py, whose docstring describes the call specs): three steps per case, every
returned array, weight and state compared bit for bit (on a GPU, where one is present, within
float32 rounding)."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError, ShapeError
from minimod.ndarray import update_kernels, update_kernels_contrib, update_kernels_multi

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "data", "optimizer",
                              "kernels_golden.npz"))
CASES = sorted(k[:-len("/spec")] for k in GOLDEN.files if k.endswith("/spec"))
STEPS = 3


def _records(cid: str) -> tuple:
    """(the case's spec, its records: key -> array), unpacked from the case's byte array."""
    spec = json.loads(str(GOLDEN[cid + "/spec"]))
    blob, records, offset = GOLDEN[cid], {}, 0
    for key, dtype, shape in spec["layout"]:
        size = int(np.prod(shape)) * np.dtype(dtype).itemsize
        records[key] = blob[offset:offset + size].view(dtype).reshape(shape)
        offset += size
    return spec, records


def _function(spec):
    if spec["ns"] == "contrib":
        return update_kernels_contrib.CONTRIB_KERNELS[spec["fn"]]
    return getattr(mx.nd, spec["fn"])


def _call(spec, nd, step):
    args = [[nd[n] for n in a] if isinstance(a, list) else nd[a] for a in spec["args"]]
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in spec["kwargs"].items()}
    for key, k in spec["step_kwargs"].items():
        kwargs[key] = [v * step for v in k] if isinstance(k, list) else k * step
    for key, name in spec["array_kwargs"].items():
        kwargs[key] = nd[name]
    out = spec["out"]
    if out is not None:
        kwargs["out"] = [nd[n] for n in out] if isinstance(out, list) else nd[out]
    return _function(spec)(*args, **kwargs)


def _same(got, want, ctx, what):
    """Bit for bit on the CPU; on a GPU, whose pow and sqrt may round differently, close."""
    if ctx.device_type == "cpu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("cid", CASES)
def test_kernel_matches_mxnet_bit_for_bit(cid, ctx):
    spec, rec = _records(cid)
    expected = {k[2:]: v for k, v in rec.items() if k.startswith("0/")}
    nd = {name: mx.nd.array(v, ctx=ctx, dtype=v.dtype) for name, v in expected.items()}
    for step in range(1, STEPS + 1):
        for name in spec["fresh"]:
            expected[name] = rec["%d/fresh_%s" % (step, name)]
            nd[name][:] = expected[name]
        ret = _call(spec, nd, step)
        rets = ret if isinstance(ret, (list, tuple)) else [ret]
        assert len(rets) == sum(1 for k in rec if k.startswith("%d/ret" % step))
        for i, r in enumerate(rets):
            want = rec["%d/ret%d" % (step, i)]
            assert r.dtype == want.dtype and r.context == ctx, (cid, step, i)
            _same(r.asnumpy(), want, ctx, "%s step %d output %d" % (cid, step, i))
        for name, a in nd.items():
            expected[name] = rec.get("%d/%s" % (step, name), expected[name])  # where changed
            _same(a.asnumpy(), expected[name], ctx, "%s step %d array %s" % (cid, step, name))


def test_every_kernel_has_a_golden_case():
    covered = {json.loads(str(GOLDEN[c + "/spec"]))["fn"] for c in CASES}
    # MXNet has group_adagrad_update for row-sparse gradients only: its golden case is with the
    # sparse kernels' (tests/data/sparse_kernels)
    sparse = np.load(os.path.join(os.path.dirname(__file__), "data", "sparse_kernels",
                                  "sparse_kernels_golden.npz"))
    covered |= {key.split("/")[0] for key in sparse.files}
    assert set(update_kernels.KERNELS) | set(update_kernels_multi.KERNELS) \
        | set(update_kernels_contrib.CONTRIB_KERNELS) <= covered


def test_nd_and_internal_names_resolve():
    for name, fn in {**update_kernels.KERNELS, **update_kernels_multi.KERNELS}.items():
        assert getattr(mx.nd, name) is fn
    for name, fn in update_kernels_contrib.INTERNAL_KERNELS.items():
        assert getattr(mx.nd._internal, name) is fn


def test_without_out_the_weight_is_left_alone():
    w, g = mx.nd.ones((3,), dtype="float16"), mx.nd.ones((3,), dtype="float16")
    mom, w32 = mx.nd.zeros((3,)), mx.nd.ones((3,))
    new = mx.nd.mp_sgd_mom_update(w, g, mom, w32, lr=0.5, momentum=0.9)
    assert new.dtype == np.float16 and new is not w
    assert w.asnumpy().tolist() == [1.0] * 3
    np.testing.assert_array_equal(w32.asnumpy(), [0.5] * 3)  # the master moves
    np.testing.assert_array_equal(mom.asnumpy(), [-0.5] * 3)
    other = mx.nd.zeros((3,), dtype="float16")
    assert mx.nd.mp_sgd_update(w, g, mx.nd.ones((3,)), lr=0.25, out=other) is other
    np.testing.assert_array_equal(other.asnumpy(), [0.75] * 3)


def test_internal_and_contrib_orders_agree():
    def run(fn, *args, **kwargs):
        w = mx.nd.array([[0.5, -0.25]])
        states = [mx.nd.zeros((1, 2)), mx.nd.zeros((1, 2))]
        fn(w, mx.nd.array([[1.0, 2.0]]), *states, *args, out=w, **kwargs)
        return w.asnumpy()
    internal = run(mx.nd._internal._adamw_update, mx.nd.array([1.0]), 0.1, eta=0.5, wd=0.1)
    contrib = run(update_kernels_contrib.adamw_update, 1.0, 0.1, 0.5, wd=0.1)
    np.testing.assert_array_equal(internal, contrib)


def test_reset_arrays_zeroes_in_place_and_returns_nothing():
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((4,))
    assert mx.nd.reset_arrays(a, b, num_arrays=2) == []
    assert a.asnumpy().sum() == 0 and b.asnumpy().sum() == 0
    with pytest.raises(MXNetError, match="num_arrays=3 but 2 arrays"):
        mx.nd.reset_arrays(a, b, num_arrays=3)


def test_errors_name_the_kernel_and_the_array():
    w = mx.nd.ones((2, 3))
    with pytest.raises(ShapeError, match="ftml_update: grad has shape"):
        mx.nd.ftml_update(w, mx.nd.ones((3, 2)), w, w, w, lr=0.1, t=1)
    with pytest.raises(MXNetError, match="t .the update count. is required"):
        mx.nd.ftml_update(w, w, w, w, w, lr=0.1)
    with pytest.raises(MXNetError, match="weight32 must be float32"):
        mx.nd.mp_sgd_update(w, w, mx.nd.ones((2, 3), dtype="float16"), lr=0.1)
    with pytest.raises(MXNetError, match="5 arrays given"):
        mx.nd.multi_sgd_update(w, w, w, w, w, lrs=(0.1, 0.1), wds=(0, 0), num_weights=2)
    with pytest.raises(MXNetError, match="lrs has 1 values for 2 weights"):
        mx.nd.multi_sgd_update(w, w, w, w, lrs=(0.1,), wds=(0, 0), num_weights=2)
    with pytest.raises(MXNetError, match="share one type"):
        mx.nd.multi_sum_sq(w, mx.nd.ones((2,), dtype="float16"), num_arrays=2)
    with pytest.raises(TypeError, match="must be an NDArray"):
        mx.nd.lamb_update_phase2(w, np.ones((2, 3)), w, w, lr=0.1)
