"""Average pooling with pooling_convention='full', whose last windows may run past the padded
input: a window wholly past it averages to 0 (MXNet 1.9.1's value), not 0/0; a window cut at
the padded edge divides by what it covers, and its gradient is the derivative of that forward
(MXNet's backward divides such windows by the whole kernel instead: docs/compatibility.md)."""
import numpy as np
import pytest

import minimod as mx

from .harness import Case, check_case


def _pool(x, **attrs):
    return mx.nd.Pooling(mx.nd.array(x), pool_type="avg", pooling_convention="full",
                         **attrs).asnumpy()


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_windows_wholly_past_the_input_average_to_zero(count_include_pad):
    x = np.arange(1, 37, dtype=np.float32).reshape(1, 1, 6, 6)
    y = _pool(x, kernel=(1, 1), stride=(3, 3), count_include_pad=count_include_pad)
    # MXNet 1.9.1 on this input: [[1, 4, 0], [19, 22, 0], [0, 0, 0]]
    np.testing.assert_array_equal(y[0, 0], [[1, 4, 0], [19, 22, 0], [0, 0, 0]])


def _ref_full_avg(kernel, stride, pad, include):
    """The 'full' convention's windows along the last axis of x, averaged over what each
    covers (the padding too when `include`, but never past it)."""
    def ref(x):
        n = x.shape[-1]
        count = -(-(n + 2 * pad - kernel) // stride) + 1
        padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(pad, pad)])
        outs = []
        for i in range(count):
            lo, hi = i * stride, min(i * stride + kernel, n + 2 * pad)
            real = max(min(hi, n + pad) - max(lo, pad), 0)
            size = (hi - lo) if include else real
            outs.append(padded[..., lo:hi].sum(-1) / max(size, 1))
        return [np.stack(outs, axis=-1)]
    return ref


@pytest.mark.parametrize("kernel,stride,pad,n", [(3, 2, 1, 4), (2, 4, 0, 5), (1, 3, 0, 6)])
@pytest.mark.parametrize("include", [True, False])
def test_full_avg_pooling_forward_and_its_gradient(kernel, stride, pad, n, include):
    x = np.random.RandomState(kernel * 10 + n).uniform(-1, 1, (2, 3, n))
    check_case(Case("Pooling", dict(kernel=(kernel,), stride=(stride,), pad=(pad,),
                                    pool_type="avg", pooling_convention="full",
                                    count_include_pad=include), [x],
                    _ref_full_avg(kernel, stride, pad, include),
                    id="full_avg_k%d_s%d_p%d" % (kernel, stride, pad)))
