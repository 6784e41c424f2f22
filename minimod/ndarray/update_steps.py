"""The arithmetic of MXNet's optimizer kernels, in place on backend arrays (NumPy or CuPy).

Two callers run these steps: the `mx.nd.<name>_update` functions of `update_kernels.py`
(`sgd_mom_update`, `nag_mom_update` ...), and the built-in optimizers of `minimod.optimizer`,
whose updates are those kernels. One copy of each kernel's arithmetic serves both, so a custom
Optimizer written against `mx.nd.sgd_mom_update` trains exactly as the built-in SGD. This
module holds the helpers and the SGD family's kernels (SGD, NAG, signSGD, Signum);
`update_steps_adaptive.py` holds Adam's, RMSProp's and FTRL's.

Each step reproduces MXNet's C++ kernel in the same order and precision: hyperparameters are
rounded to float32 (the kernel's parameter struct) and converted to the weight's type `ct`,
and products of two hyperparameters are formed in `ct`, as the kernels form them. The weight
and the states change in place; the gradient is left alone. Temporaries come from `pool`, a
dict the caller keeps (an optimizer's scratch pool) that holds them by shape, type and device
(`scratch_arrays`) and SGD's block views by buffer (`sgd_block_views`), so a step allocates
nothing in the steady state.

Clipping is on when `clip_gradient` is truthy and >= 0 (`clip_on`): MXNet's optimizers pass it
to the kernel only when set, and the kernel clips only when it is >= 0.
"""
from __future__ import annotations

import numpy as np

from .. import backend

__all__ = [
    "BlockViews", "DeviceScalars", "SGD_BLOCK", "SGD_KERNELS", "SMALL_VIEWS", "clip_on", "f32",
    "hyper", "kernel_grad", "nag_mom", "scratch_arrays", "sgd_block_views", "sgd_fused",
    "sgd_kernel", "sgd_kernel_args", "sgd_mom", "sgd_passes", "sgd_plain", "sgd_scalars",
    "signsgd", "signum",
]

array_module_of = backend.array_module_of


def f32(value: float) -> np.float32:
    return np.float32(value)


def clip_on(clip_gradient: float | None) -> bool:
    """Kernel-style clipping: MXNet passes clip_gradient only when truthy, and the kernel
    clips only when it is >= 0."""
    return bool(clip_gradient) and clip_gradient >= 0


_HYPER: dict = {}


def hyper(xp, ct, *factors: float):
    """The product of float32-rounded hyperparameters in the weight's type `ct`, as MXNet's
    kernels form it; under NumPy a cached read-only 0-d array, since a scalar argument (even
    making the NumPy scalar) would cost a fresh 0-d array on every call."""
    key = (xp is np, ct, factors)
    value = _HYPER.get(key)
    if value is None:
        value = ct(f32(factors[0]))
        for factor in factors[1:]:
            value = value * ct(f32(factor))
        if xp is np:
            value = np.array(value)
            value.flags.writeable = False
        if len(_HYPER) > 1024:
            _HYPER.clear()
        _HYPER[key] = value
    return value


def _empty_like(arr, dtype=None):
    xp = array_module_of(arr)
    if xp is np:
        return np.empty(arr.shape, dtype=dtype or arr.dtype)
    with arr.device:
        return xp.empty(arr.shape, dtype=dtype or arr.dtype)


def scratch_arrays(pool: dict, like, count: int, dtype=None) -> list:
    """`count` scratch arrays shaped like `like` (of `dtype`, default like's), kept in `pool`
    by shape, type and device and handed back again on the next call."""
    dtype = like.dtype if dtype is None else np.dtype(dtype)
    device = getattr(getattr(like, "device", None), "id", -1)
    key = (like.shape, dtype.str, device)
    arrays = pool.get(key)
    if arrays is None:
        arrays = pool[key] = []
    while len(arrays) < count:
        arrays.append(_empty_like(like, dtype))
    return arrays[:count]


def kernel_grad(xp, g, w, wd: float, out, tmp, rescale_grad: float, clip_gradient):
    """out = clip(rescale * g + wd * w) as MXNet's C++ kernels form it (Adam, RMSProp, FTML):
    float32 hyperparameters in the weight's type; tmp is scratch."""
    ct = w.dtype.type
    xp.multiply(g, ct(f32(rescale_grad)), out=out)
    xp.multiply(w, ct(f32(wd)), out=tmp)
    out += tmp
    if clip_on(clip_gradient):
        bound = ct(f32(clip_gradient))
        xp.clip(out, -bound, bound, out=out)
    return out


# ============================================================================ SGD

def sgd_plain(w, g, lr: float, wd: float, rescale_grad: float, clip_gradient,
              pool: dict) -> None:
    """MXNet's single-array sgd_update kernel: `(1 - lr*wd) * w - lr * clip(rescale * g)`."""
    xp, ct = array_module_of(w), w.dtype.type
    lr32 = f32(lr)
    step = scratch_arrays(pool, w, 1)[0]
    if clip_on(clip_gradient):
        clip = ct(f32(clip_gradient))
        xp.multiply(g, ct(f32(rescale_grad)), out=step)
        xp.clip(step, -clip, clip, out=step)
        step *= ct(lr32)
    else:
        xp.multiply(g, ct(lr32 * f32(rescale_grad)), out=step)
    w *= ct(f32(1.0) - lr32 * f32(wd))
    w -= step


def sgd_mom(w, g, mom, lr: float, wd: float, momentum: float, rescale_grad: float,
            clip_gradient, pool: dict) -> None:
    """MXNet's sgd_mom_update kernel (`mom` None: its multi_sgd_update form): one CuPy kernel
    (`sgd_fused`), or in-place passes block by block (`sgd_passes` over `sgd_block_views`)."""
    xp = array_module_of(w)
    scalars = sgd_scalars(xp, w.dtype.type, lr, wd, momentum, rescale_grad, clip_gradient)
    if not sgd_fused(xp, w, g, mom, scalars):
        sgd_passes(xp, w, mom, sgd_block_views(pool, w, g, mom, 2 if wd else 1), scalars)


# Elements per block of SGD's NumPy update: 128 KB of float32, well inside a core's L2.
SGD_BLOCK = 32768


def sgd_block_views(pool: dict, w, g, mom, scratches: int) -> list:
    """[(w, g, mom, step scratch, decay scratch or None)] block by block.

    The step lr * clip(rescale * g) (+ lr * wd * w) goes through a scratch small enough to
    stay in the cache, one block of a large contiguous buffer at a time: a scratch the size
    of the parameters would stream them through memory twice more, about a third of the
    update's time inside a training step (benchmarks/RESULTS.md). The gradient stays
    untouched, as MXNet leaves it, and every element sees the operations of one
    whole-buffer pass in the same order. Small or strided arrays are one block.

    A flat parameter buffer comes back with the same arrays every step, so its list of
    block views is made once and kept in `pool` (`BlockViews`): slicing five arrays per block
    cost about as much Python time as the block's two ufunc calls. Small arrays keep their
    one-block lists too (the `BlockViews.SMALL` most recent), which spares the scratch
    lookup in every step of a small model."""
    small = w.size <= SGD_BLOCK
    if not small and not (w.flags.c_contiguous and g.flags.c_contiguous
                          and (mom is None or mom.flags.c_contiguous)):
        tmp = scratch_arrays(pool, w, scratches)  # large and strided: one block, not kept
        return [(w, g, mom, tmp[0], tmp[1] if scratches > 1 else None)]
    kind = SMALL_VIEWS if small else BlockViews
    cache = pool.get(kind)
    if cache is None:
        cache = pool[kind] = BlockViews(BlockViews.SMALL if small else BlockViews.LARGE)
    views = cache.get(w, g, mom, scratches)
    if views is None:
        views = _sgd_blocks(pool, w, g, mom, scratches, small)
        cache.put(w, g, mom, scratches, views)
    return views


def _sgd_blocks(pool: dict, w, g, mom, scratches: int, small: bool) -> list:
    """A new list of block views (one block for a small array) over scratch from `pool`."""
    if small:
        tmp = scratch_arrays(pool, w, scratches)
        return [(w, g, mom, tmp[0], tmp[1] if scratches > 1 else None)]
    flat_w, flat_g = w.reshape(-1), g.reshape(-1)
    flat_m = None if mom is None else mom.reshape(-1)
    tmp = scratch_arrays(pool, flat_w[:SGD_BLOCK], scratches)
    views = []
    for lo in range(0, w.size, SGD_BLOCK):
        hi = min(lo + SGD_BLOCK, w.size)
        views.append((flat_w[lo:hi], flat_g[lo:hi],
                      None if mom is None else flat_m[lo:hi], tmp[0][:hi - lo],
                      tmp[1][:hi - lo] if scratches > 1 else None))
    return views


class BlockViews:
    """SGD's block views of the last few (weight, gradient, momentum) buffers updated,
    found again by the identity of those arrays. The views keep their buffers alive, so only
    the `size` most recently made lists are kept: a module's flat buffers come back every
    step, and an old module's are let go after a few new ones."""

    LARGE = 4  # lists of large buffers (their views keep megabytes alive)
    SMALL = 64  # one-block lists of small arrays (a small model's parameters, one by one)

    def __init__(self, size: int):
        self.size = size
        self._entries: dict = {}

    def get(self, w, g, mom, scratches: int):
        entry = self._entries.get((id(w), id(g), id(mom), scratches))
        if entry is None or entry[0] is not w or entry[1] is not g or entry[2] is not mom:
            return None
        return entry[3]

    def put(self, w, g, mom, scratches: int, views: list) -> None:
        entries = self._entries
        key = (id(w), id(g), id(mom), scratches)
        entries.pop(key, None)
        while len(entries) >= self.size:
            del entries[next(iter(entries))]
        entries[key] = (w, g, mom, views)


# the scratch-pool key of the one-block lists of small arrays (BlockViews is the large ones')
SMALL_VIEWS = "small block views"


# SGD's update as one CuPy kernel per (momentum?, clipping?) case, with the NumPy passes'
# arithmetic in their order (backend.elementwise); lr_wd is 0 without weight decay. The
# clip is CUDA's min and max, which drop a NaN, times 1 + nan / (1 - nan) * 0 with nan = 1
# for a NaN gradient (1 + inf * 0: NaN) and 0 otherwise (exactly 1): a NaN gradient stays
# NaN, as MXNet's clip and NumPy's keep it.
_CLIPPED = ("T a = g * rescale; T nan = (T)(a != a);"
            "T step = min(max(a, -clip), clip) * ((T)1 + nan / ((T)1 - nan) * (T)0) * lr;")
SGD_KERNELS = {
    (True, False): backend.ElementwiseSpec(
        "sgd_mom", "T g, T lr_rescale, T lr_wd, T mu", "T w, T mom",
        "mom = mom * mu - w * lr_wd - g * lr_rescale; w = w + mom;"),
    (True, True): backend.ElementwiseSpec(
        "sgd_mom_clip", "T g, T rescale, T clip, T lr, T lr_wd, T mu", "T w, T mom",
        _CLIPPED + "mom = mom * mu - w * lr_wd - step; w = w + mom;"),
    (False, False): backend.ElementwiseSpec(
        "sgd", "T g, T lr_rescale, T lr_wd", "T w",
        "w = w - (g * lr_rescale + w * lr_wd);"),
    (False, True): backend.ElementwiseSpec(
        "sgd_clip", "T g, T rescale, T clip, T lr, T lr_wd", "T w",
        _CLIPPED + "w = w - (step + w * lr_wd);"),
}


def sgd_scalars(xp, ct, lr: float, wd: float, momentum: float, rescale_grad: float,
                clip_gradient) -> tuple:
    """The hyperparameters of MXNet's multi_sgd kernel for weights of type `ct`: float32
    values converted to `ct`, every product of two rounded to `ct` (`hyper`).
    (clip?, lr * rescale (rescale when clipping), -clip, clip, lr (the last three only when
    clipping), lr * wd (None without weight decay), momentum (0 without))."""
    clip = clip_on(clip_gradient)
    lr_wd = hyper(xp, ct, lr, wd) if wd else None
    mu = hyper(xp, ct, momentum if momentum > 0 else 0.0)
    if clip:
        return (True, hyper(xp, ct, rescale_grad), hyper(xp, ct, -clip_gradient),
                hyper(xp, ct, clip_gradient), hyper(xp, ct, lr), lr_wd, mu)
    return False, hyper(xp, ct, lr, rescale_grad), None, None, None, lr_wd, mu


def sgd_kernel(xp, w, g, mom, clip: bool):
    """SGD's CuPy kernel for these arrays (`SGD_KERNELS`), or None under NumPy or when the
    gradient's type differs from the weight's."""
    if g.dtype != w.dtype:
        return None
    return backend.elementwise(xp, SGD_KERNELS[mom is not None, clip])


def sgd_kernel_args(ct, momentum: bool, scalars: tuple) -> tuple:
    """The scalar arguments of SGD's kernel, in its order, for `scalars` (`sgd_scalars`)."""
    clip, rescaled, _, bound, lr, lr_wd, mu = scalars
    lr_wd = ct(0) if lr_wd is None else lr_wd
    args = (rescaled, bound, lr, lr_wd) if clip else (rescaled, lr_wd)
    return args + (mu,) if momentum else args


def sgd_fused(xp, w, g, mom, scalars: tuple, args=None) -> bool:
    """SGD's update as one CuPy kernel (`sgd_kernel`); False, doing nothing, where there is
    none. `args` are the kernel's scalar arguments when the caller keeps them (in device
    memory: `DeviceScalars`), else they are formed from `scalars`."""
    fused = sgd_kernel(xp, w, g, mom, scalars[0])
    if fused is None:
        return False
    if args is None:
        args = sgd_kernel_args(w.dtype.type, mom is not None, scalars)
    if mom is not None:
        fused(g, *args, w, mom)
    else:
        fused(g, *args, w)
    return True


class DeviceScalars:
    """Up to `count` kernel scalars kept in device memory, for a kernel that a CUDA graph
    replays: the graph reads them at each launch, so a new learning rate is one small copy
    to the device, not a new capture. `write(values)` copies the values in on the current
    stream (never during a capture: it is a host-to-device copy); `arrays` are the 0-d
    views of the last values written, passed to the kernel in place of numbers, which it
    reads as broadcast operands."""

    __slots__ = ("buffer", "views", "arrays")

    def __init__(self, xp, dtype, count: int):
        self.buffer = xp.zeros(count, dtype)
        self.views = tuple(self.buffer[i:i + 1].reshape(()) for i in range(count))
        self.arrays: tuple = ()

    def write(self, values: tuple) -> None:
        host = np.zeros(len(self.views), self.buffer.dtype)
        host[:len(values)] = values
        self.buffer.set(host)
        self.arrays = self.views[:len(values)]


def sgd_passes(xp, w, mom, blocks: list, scalars: tuple) -> None:
    """SGD's update as in-place ufunc passes, block by block (`sgd_block_views`), in the order of
    MXNet's kernel: step = lr * clip(rescale * g); m = mu * m - lr * wd * w - step,
    w += m (without momentum w -= step + lr * wd * w)."""
    clip, rescaled, lo, hi, lr, lr_wd, mu = scalars
    if mom is not None:
        mom *= mu
    for w_, g_, m_, t, d in blocks:
        xp.multiply(g_, rescaled, out=t)
        if clip:
            xp.clip(t, lo, hi, out=t)
            t *= lr
        if d is not None:
            xp.multiply(w_, lr_wd, out=d)
        if m_ is not None:
            if d is not None:
                m_ -= d
            m_ -= t
        else:
            if d is not None:
                t += d
            w_ -= t
    if mom is not None:
        w += mom


def nag_mom(w, g, mom, lr: float, wd: float, momentum: float, rescale_grad: float,
            clip_gradient, pool: dict) -> None:
    """MXNet's nag_mom_update kernel: `g = clip(rescale * grad) + wd * w`;
    `w += mu * m_new - lr * g` with `m_new = mu * m - lr * g`."""
    xp, ct = array_module_of(w), w.dtype.type
    rescaled, grad, step = scratch_arrays(pool, w, 3)
    xp.multiply(g, ct(f32(rescale_grad)), out=rescaled)
    if clip_on(clip_gradient):
        clip = ct(f32(clip_gradient))
        xp.clip(rescaled, -clip, clip, out=rescaled)
    lr_c, wd_c = ct(f32(lr)), ct(f32(wd))
    mu = ct(f32(momentum)) if momentum > 0 else ct(0)
    mom *= mu
    # MXNet's kernel: w_new = (w - mu m) + (mu + 1) (mu m - lr (g + wd w)). It writes the
    # weight in place first, so the new momentum decays with the *new* weight:
    # m_new = mu m - lr (g + wd w_new).
    xp.multiply(w, wd_c, out=grad)
    grad += rescaled
    grad *= lr_c
    xp.subtract(mom, grad, out=step)
    step *= mu + ct(1)
    w -= mom
    w += step
    xp.multiply(w, wd_c, out=grad)
    grad += rescaled
    grad *= lr_c
    mom -= grad


def signsgd(w, g, lr: float, wd: float, rescale_grad: float, clip_gradient,
            pool: dict) -> None:
    """MXNet's signsgd_update kernel: `w = (1 - lr wd) w - lr sign(clip(rescale grad))`."""
    xp, ct = array_module_of(w), w.dtype.type
    lr32 = f32(lr)
    grad = scratch_arrays(pool, w, 1)[0]
    xp.multiply(g, ct(f32(rescale_grad)), out=grad)
    if clip_on(clip_gradient):
        xp.clip(grad, ct(-f32(clip_gradient)), ct(f32(clip_gradient)), out=grad)
    xp.sign(grad, out=grad)
    grad *= ct(lr32)
    w *= ct(f32(1.0) - lr32 * f32(wd))
    w -= grad


def signum(w, g, mom, lr: float, wd: float, momentum: float, wd_lh: float,
           rescale_grad: float, clip_gradient, pool: dict) -> None:
    """MXNet's signum_update kernel: `m = mu m - (1-mu) (wd w + clip(rescale grad))`,
    `w = (1 - lr wd_lh) w + lr sign(m)`."""
    xp, ct = array_module_of(w), w.dtype.type
    lr32 = f32(lr)
    grad, tmp = scratch_arrays(pool, w, 2)
    mu = f32(momentum) if momentum > 0 else f32(0.0)
    keep = f32(1.0) - mu
    if clip_on(clip_gradient):
        bound = ct(f32(clip_gradient))
        xp.multiply(g, ct(f32(rescale_grad)), out=grad)
        xp.clip(grad, -bound, bound, out=grad)
        grad *= ct(keep)
    else:
        xp.multiply(g, ct(keep * f32(rescale_grad)), out=grad)
    mom *= ct(mu)
    xp.multiply(w, ct(keep * f32(wd)), out=tmp)
    mom -= tmp
    mom -= grad
    xp.sign(mom, out=tmp)
    tmp *= ct(lr32)
    if wd_lh:
        w *= ct(f32(1.0) - lr32 * f32(wd_lh))
    w += tmp
