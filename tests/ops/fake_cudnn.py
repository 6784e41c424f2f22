"""A NumPy stand-in for CuPy's cuDNN wrapper (`cupyx.cudnn`), for CPU tests of the cuDNN
variants of Convolution and Pooling.

It has the wrapper's signatures (positional order and keyword names, as in CuPy 13) and its
demands: destinations C-contiguous, data 4-D or 5-D. The arithmetic is written directly from
the definitions (a loop over kernel taps, each tap one einsum or slice-add), independently of
minimod's im2col code, so a test that binds the variants with this module checks the variants'
plumbing (which arrays reach backward, the plan's contract, 1-D lifting, bias and groups)
against minimod's CPU path. It does not check cuDNN itself, which only a GPU run can.
"""
import itertools

import numpy as np

CUDNN_POOLING_MAX = 0
CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING = 1
CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING = 2
CUDNN_POOLING_MAX_DETERMINISTIC = 3


class Lib:
    """The constants module (`cupy.cuda.cudnn`)."""
    CUDNN_POOLING_MAX = CUDNN_POOLING_MAX
    CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
    CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING = CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING
    CUDNN_POOLING_MAX_DETERMINISTIC = CUDNN_POOLING_MAX_DETERMINISTIC


CALLS = []  # names of the wrapper functions called, for tests that count them


def _check(*arrays, out=None):
    for arr in arrays:
        if arr is not None and arr.ndim not in (4, 5):
            raise ValueError("cuDNN descriptors here take 4-D or 5-D arrays, got %d-D"
                             % arr.ndim)
    if out is not None and not out.flags.c_contiguous:
        raise ValueError("cupyx.cudnn supports c-contiguous arrays only")


def _taps(kernel):
    return itertools.product(*(range(k) for k in kernel))


def _window(xpad, tap, stride, dilate, out_spatial):
    return xpad[(Ellipsis,) + tuple(slice(t * d, t * d + (n - 1) * s + 1, s) for t, s, d, n in
                                    zip(tap, stride, dilate, out_spatial))]


def _pad(x, pad, fill=0.0):
    return np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad], constant_values=fill)


def convolution_forward(x, W, b, y, pad, stride, dilation, groups, *, auto_tune, tensor_core,
                        d_layout=0, w_layout=0):
    CALLS.append("convolution_forward")
    _check(x, W, y, out=y)
    assert tensor_core in ("always", "auto", "never")
    n, c = x.shape[:2]
    f, cg = W.shape[:2]
    xpad = _pad(x, pad).reshape((n, groups, cg) + tuple(d + 2 * p for d, p in
                                                      zip(x.shape[2:], pad)))
    wg = W.reshape((groups, f // groups, cg) + W.shape[2:])
    acc = np.zeros((n, groups, f // groups) + y.shape[2:], dtype=np.float64)
    for tap in _taps(W.shape[2:]):
        win = _window(xpad, tap, stride, dilation, y.shape[2:])
        acc += np.einsum("ngc...,gfc->ngf...", win, wg[(Ellipsis,) + tap])
    y[...] = acc.reshape(y.shape)
    if b is not None:  # CuPy adds the bias with a call of its own (cuDNN's addTensor)
        add_tensor(b, y)


def add_tensor(b, y):
    """y += b over y's channels, as cuDNN's addTensor (one rounding per element)."""
    y += b.reshape((1, -1) + (1,) * (y.ndim - 2))


def convolution_backward_data(W, x, b, y, pad, stride, dilation, groups, *, deterministic,
                              auto_tune, tensor_core, d_layout=0, w_layout=0):
    """x: the output gradient, y: the data gradient written (cuDNN's naming)."""
    CALLS.append("convolution_backward_data")
    _check(W, x, y, out=y)
    gy, gx = x, y
    n = gy.shape[0]
    f, cg = W.shape[:2]
    wg = W.reshape((groups, f // groups, cg) + W.shape[2:])
    gyg = gy.reshape((n, groups, f // groups) + gy.shape[2:])
    padded = tuple(d + 2 * p for d, p in zip(gx.shape[2:], pad))
    acc = np.zeros((n, groups, cg) + padded, dtype=np.float64)
    for tap in _taps(W.shape[2:]):
        _window(acc, tap, stride, dilation, gy.shape[2:])[...] += np.einsum(
            "ngf...,gfc->ngc...", gyg, wg[(Ellipsis,) + tap])
    acc = acc.reshape((n, groups * cg) + padded)
    gx[...] = acc[(Ellipsis,) + tuple(slice(p, p + d) for p, d in zip(pad, gx.shape[2:]))]


def convolution_backward_filter(x, gy, gW, pad, stride, dilation, groups, *, deterministic,
                                auto_tune, tensor_core, d_layout=0, w_layout=0):
    CALLS.append("convolution_backward_filter")
    _check(x, gy, gW, out=gW)
    n = x.shape[0]
    f, cg = gW.shape[:2]
    xpad = _pad(x, pad).reshape((n, groups, cg) + tuple(d + 2 * p for d, p in
                                                      zip(x.shape[2:], pad)))
    gyg = gy.reshape((n, groups, f // groups) + gy.shape[2:])
    out = np.zeros((groups, f // groups, cg) + gW.shape[2:], dtype=np.float64)
    for tap in _taps(gW.shape[2:]):
        win = _window(xpad, tap, stride, (1,) * len(tap) if dilation is None else dilation,
                      gy.shape[2:])
        flat = win.reshape(win.shape[:3] + (-1,))
        out[(Ellipsis,) + tap] = np.einsum("ngfp,ngcp->gfc", gyg.reshape(gyg.shape[:3] + (-1,)),
                                           flat)
    gW[...] = out.reshape(gW.shape)


def _pool_counts(x, y, ksize, stride, pad, mode):
    """Per-output divisor of average pooling."""
    if mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING:
        return float(np.prod(ksize))
    ones = _pad(np.ones((1, 1) + x.shape[2:]), pad)
    count = np.zeros((1, 1) + y.shape[2:])
    for tap in _taps(ksize):
        count += _window(ones, tap, stride, (1,) * len(ksize), y.shape[2:])
    return count


def pooling_forward(x, y, ksize, stride, pad, mode):
    CALLS.append("pooling_forward")
    _check(x, y, out=y)
    is_max = mode in (CUDNN_POOLING_MAX, CUDNN_POOLING_MAX_DETERMINISTIC)
    xpad = _pad(x.astype(np.float64), pad, -np.inf if is_max else 0.0)
    dil = (1,) * len(ksize)
    wins = [_window(xpad, tap, stride, dil, y.shape[2:]) for tap in _taps(ksize)]
    if is_max:
        y[...] = np.max(wins, axis=0)
    else:
        y[...] = np.sum(wins, axis=0) / _pool_counts(x, y, ksize, stride, pad, mode)
    return y


def pooling_backward(x, y, gy, ksize, stride, pad, mode):
    """Returns a new gradient array, as the wrapper does; max sends each window's gradient to
    its first maximum in row-major order."""
    CALLS.append("pooling_backward")
    _check(x, y, gy)
    is_max = mode in (CUDNN_POOLING_MAX, CUDNN_POOLING_MAX_DETERMINISTIC)
    xpad = _pad(x.astype(np.float64), pad, -np.inf)
    gpad = np.zeros(xpad.shape)
    dil = (1,) * len(ksize)
    taken = np.zeros(y.shape, dtype=bool)
    share = gy if is_max else gy / _pool_counts(x, y, ksize, stride, pad, mode)
    for tap in _taps(ksize):
        target = _window(gpad, tap, stride, dil, y.shape[2:])
        if is_max:
            hit = (_window(xpad, tap, stride, dil, y.shape[2:]) == y) & ~taken
            taken |= hit
            target += np.where(hit, gy, 0)
        else:
            target += share
    core = gpad[(Ellipsis,) + tuple(slice(p, p + d) for p, d in zip(pad, x.shape[2:]))]
    return np.ascontiguousarray(core).astype(x.dtype)
