"""`cast_into` (minimod/ops/helpers.py): float-to-integer casts give MXNet's CPU (x86-64)
results on every array module, also one whose own conversions saturate as a GPU's do (a real
H100 run found CuPy's int32 gamma of large values at 2147483647 where MXNet has -2147483648)."""
import platform
import warnings

import numpy as np
import pytest

from minimod.ops.helpers import cast_into

VALUES = [np.nan, np.inf, -np.inf, 1e10, -1e10, 3e9, -3e9, 2147483647.0, 2147483647.5,
          2147483648.0, -2147483648.0, -2147483648.9, -2147483649.0, 300.7, -129.2, 127.9,
          128.0, 255.9, 256.0, -0.9, 0.0, -1.5, 65535.4, 65536.0, -32769.0, 9.3e18, -9.3e18,
          1e300]
INTEGERS = ("int8", "uint8", "int16", "uint16", "int32", "int64")


def _floats(dtype):
    with np.errstate(all="ignore"):
        return np.array(VALUES).astype(dtype)


class _Saturating:
    """NumPy, except that float-to-integer conversions clamp to the type's range and NaN
    gives 0, as CUDA's (and Arm's) do."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def _clamp(src, dtype):
        src = np.asarray(src)
        if src.dtype.kind != "f" or np.dtype(dtype).kind not in "iu":
            return src
        info = np.iinfo(dtype)
        return np.nan_to_num(np.clip(src, info.min, info.max), nan=0.0)

    def copyto(self, dst, src, casting="same_kind", where=True):
        np.copyto(dst, self._clamp(src, dst.dtype), casting=casting, where=where)


@pytest.mark.parametrize("src", ["float16", "float32", "float64"])
@pytest.mark.parametrize("dst", INTEGERS)
def test_the_same_on_numpy_and_on_a_saturating_module(src, dst):
    x = _floats(src)
    want, got = np.zeros(x.shape, dst), np.zeros(x.shape, dst)
    with np.errstate(all="ignore"):
        cast_into(np, want, x)
        # astype inside cast_into sees in-range values only, so a saturating astype would
        # not change them: the module's copyto is what could differ
        cast_into(_Saturating(), got, x)
    np.testing.assert_array_equal(got, want)


def test_mxnets_cpu_results():
    """NaN and out-of-range floats become the minimum of int32 (int64 for int64), then wrap."""
    cases = [("int32", np.nan, -2147483648), ("int32", 3e9, -2147483648),
             ("int32", -2147483648.9, -2147483648), ("int32", 2147483647.5, 2147483647),
             ("int8", 300.7, 44), ("int8", -129.2, 127), ("uint8", np.inf, 0),
             ("uint8", -1.5, 255), ("int64", 1e10, 10000000000),
             ("int64", -1e19, -9223372036854775808), ("int64", np.nan, -9223372036854775808)]
    for dtype, value, want in cases:
        out = np.zeros(1, dtype)
        with np.errstate(all="ignore"):
            cast_into(np, out, np.array([value]))
        assert out[0] == want, (dtype, value, out[0], want)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="NumPy's own casts are x86-64's only on x86-64")
@pytest.mark.parametrize("src", ["float16", "float32", "float64"])
def test_equal_to_numpys_own_casts_on_x86(src):
    x = _floats(src)
    for dst in INTEGERS:
        want, got = np.zeros(x.shape, dst), np.zeros(x.shape, dst)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.copyto(want, x, casting="unsafe")
            cast_into(np, got, x)
        np.testing.assert_array_equal(got, want, err_msg=dst)


def test_other_casts_are_plain_copies():
    out = np.zeros(3, "float16")
    cast_into(np, out, np.array([1.5, -2.25, 1e4]))
    np.testing.assert_array_equal(out, np.array([1.5, -2.25, 1e4]).astype("float16"))
    out = np.zeros(2, "int8")
    cast_into(np, out, np.array([300, -1], "int32"))  # integer to integer wraps
    np.testing.assert_array_equal(out, [44, -1])


def test_every_float_to_integer_path_of_the_ndarray_api_gives_mxnets_results(ctx):
    """astype, cast, Cast, nd.array(dtype=), integer ** and scalar arithmetic on integer
    arrays all go through cast_into: on a GPU (which saturates) as on the CPU. Values from
    MXNet 1.9.1 on x86-64."""
    import minimod as mx
    x = mx.nd.array([np.nan, 3e9, -1e30, 2.7, -2.7], ctx=ctx)
    want = [-2147483648, -2147483648, -2147483648, 2, -2]
    np.testing.assert_array_equal(x.astype("int32").asnumpy(), want)
    np.testing.assert_array_equal(mx.nd.cast(x, "int32").asnumpy(), want)
    np.testing.assert_array_equal(mx.nd.Cast(x, dtype="int32").asnumpy(), want)
    np.testing.assert_array_equal(
        mx.nd.array([300.7, -1.5], dtype="int8", ctx=ctx).asnumpy(), [44, -1])
    ints = mx.nd.array([2, 3], dtype="int32", ctx=ctx)
    np.testing.assert_array_equal((ints ** mx.nd.array([40, 2], dtype="int32", ctx=ctx))
                                  .asnumpy(), [-2147483648, 9])
    np.testing.assert_array_equal(mx.nd.gamma(mx.nd.array([14, 3], dtype="int32", ctx=ctx))
                                  .asnumpy(), [-2147483648, 2])  # 13! is past int32


def test_gamma_of_nan_is_nan(ctx):
    import minimod as mx
    got = mx.nd.gamma(mx.nd.array([np.nan, 3.0, -np.inf], ctx=ctx)).asnumpy()
    assert np.isnan(got[0]) and got[1] == 2 and np.isnan(got[2])
