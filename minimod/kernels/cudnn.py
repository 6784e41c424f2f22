"""cuDNN's convolution and pooling, and the op variants that run through them on GPUs.

Two bindings make the calls, whichever `backend.cudnn_library` found: `CudnnOps` through CuPy's
cuDNN wrapper (CuPy <= 13), and `cudnn_frontend.FrontendOps` through NVIDIA's cuDNN frontend
(nvidia-cudnn-frontend, for CuPy 14, which has no wrapper). Both have the same methods and
conventions; the frontend has no pooling backward in Python, so its `pools` is False and
Pooling keeps its own path there. Where one loads, the device pass (`minimod.passes.device`) and
imperative calls swap in CudnnConvolution, CudnnDeconvolution and CudnnPooling
(`variant_chooser`) unless the op sets cudnn_off: same names, slots, attrs and JSON as the
reference ops, reading the data (not im2col columns or masks) in backward. They live here,
beside the other kernels, because they are another way to compute the same numbers, chosen per
device.
"""
from __future__ import annotations

from .. import backend
from ..backend import array_module_of
from ..ops.convolution import Convolution, Deconvolution
from ..ops.helpers import bias_view
from ..ops.pooling import Pooling
from . import pool_gpu
from .registry import recast, variant_chooser

__all__ = ["CudnnOps", "cudnn_for", "CudnnConvolution", "CudnnDeconvolution", "CudnnPooling"]

_OPS: list = []  # [CudnnOps, FrontendOps or None], made on first use


def cudnn_for(ctx):
    """The cuDNN convolution and pooling calls for `ctx`: a `CudnnOps` where CuPy's cuDNN
    wrapper loads, else a `FrontendOps` where nvidia-cudnn-frontend does, else None (also for
    CPU contexts, and when the environment sets MINIMOD_CUDNN=0). Ops without it take their
    im2col path on the GPU as on the CPU."""
    if ctx is None or ctx.device_typeid != 2:
        return None
    if not _OPS:
        _OPS.append(_ops_for(backend.cudnn_library()))
    return _OPS[0]


def _ops_for(lib):
    """The ops object for `backend.cudnn_library()`'s tagged pair."""
    if lib is None:
        return None
    kind, library = lib
    if kind == "cupy":
        return CudnnOps(*library)
    if kind == "frontend":
        from .cudnn_frontend import FrontendOps
        return FrontendOps(library)
    raise ValueError("unknown cuDNN binding %r" % (kind,))


def _lift_1d(arr):
    """(N, C, W) as the (N, C, 1, W) view cuDNN's 4-D descriptors take; 4-D/5-D unchanged."""
    return arr.reshape(arr.shape[:2] + (1,) + arr.shape[2:]) if arr.ndim == 3 else arr


def _lift_dims(nd: int, values, fill: int) -> tuple:
    """A per-spatial-dim tuple, with `fill` for the unit height that `_lift_1d` adds."""
    return ((fill,) + tuple(values)) if nd == 1 else tuple(values)


def _lift_conv(nd: int, pad, stride, dilate) -> tuple:
    return _lift_dims(nd, pad, 0), _lift_dims(nd, stride, 1), _lift_dims(nd, dilate, 1)


def _lift_pool(nd: int, kernel, stride, pad) -> tuple:
    return _lift_dims(nd, kernel, 1), _lift_dims(nd, stride, 1), _lift_dims(nd, pad, 0)


class CudnnOps:
    """Convolution and pooling through CuPy's cuDNN wrapper, in minimod's conventions.

    `wrapper` is the module with convolution_forward / convolution_backward_data /
    convolution_backward_filter / pooling_forward / pooling_backward (`cupyx.cudnn`); `lib`
    holds cuDNN's constants (`cupy.cuda.cudnn`). Every call writes into the array it is given:
    1-D data is lifted to 2-D with a unit height, and a destination that is not C-contiguous
    (which cuDNN's descriptors cannot describe) is computed into a temporary and copied.
    Backward calls ask for deterministic algorithms, so seeded runs repeat exactly, and
    tensor-core math is not requested (float32 stays float32). The convolution calls take the
    op's cudnn_tune and workspace (`tune`, `workspace_mb`) as FrontendOps does, and ignore them:
    CuPy's wrapper runs its heuristic's choice, as it always did here.
    """

    pools = True  # pooling forward and backward go through cuDNN too
    # the wrapper adds the bias with a call of its own after the convolution (cuDNN's
    # addTensor: y + b, one rounding), which the op reading the output may make instead
    # (`kernels.reader_bias`)
    bias_apart = True

    def serves(self, ctx, dtype) -> bool:
        """CuPy's wrapper serves half, single and double floats (see _cudnn_variant)."""
        return True

    def __init__(self, wrapper, lib):
        self.wrapper = wrapper
        self.pool_modes = {
            "max": getattr(lib, "CUDNN_POOLING_MAX_DETERMINISTIC", lib.CUDNN_POOLING_MAX),
            "avg": lib.CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
            "avg_exclude_pad": lib.CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
        }

    @staticmethod
    def _contiguous_target(dst):
        if dst.flags.c_contiguous:
            return dst
        return array_module_of(dst).empty(dst.shape, dtype=dst.dtype)

    def _into(self, dst, fill) -> None:
        """fill(target) writes into a C-contiguous stand-in for dst, copied back if needed."""
        target = self._contiguous_target(dst)
        fill(target)
        if target is not dst:
            dst[...] = target

    def conv_forward(self, x, w, b, y, pad, stride, dilate, groups, tune=None,
                     workspace_mb=None) -> None:
        pad, stride, dilate = _lift_conv(x.ndim - 2, pad, stride, dilate)
        self._into(y, lambda out: self.wrapper.convolution_forward(
            _lift_1d(x), _lift_1d(w), b, _lift_1d(out), pad, stride, dilate, groups,
            auto_tune=False, tensor_core="never"))

    def conv_backward_data(self, w, gy, gx, pad, stride, dilate, groups, tune=None,
                           workspace_mb=None) -> None:
        pad, stride, dilate = _lift_conv(gy.ndim - 2, pad, stride, dilate)
        self._into(gx, lambda out: self.wrapper.convolution_backward_data(
            _lift_1d(w), _lift_1d(gy), None, _lift_1d(out), pad, stride, dilate, groups,
            deterministic=True, auto_tune=False, tensor_core="never"))

    def conv_backward_filter(self, x, gy, gw, pad, stride, dilate, groups, tune=None,
                             workspace_mb=None) -> None:
        pad, stride, dilate = _lift_conv(x.ndim - 2, pad, stride, dilate)
        self._into(gw, lambda out: self.wrapper.convolution_backward_filter(
            _lift_1d(x), _lift_1d(gy), _lift_1d(out), pad, stride, dilate, groups,
            deterministic=True, auto_tune=False, tensor_core="never"))

    def pool_forward(self, x, y, kernel, stride, pad, mode: str) -> None:
        kernel, stride, pad = _lift_pool(x.ndim - 2, kernel, stride, pad)
        self._into(y, lambda out: self.wrapper.pooling_forward(
            _lift_1d(x), _lift_1d(out), kernel, stride, pad, self.pool_modes[mode]))

    def pool_backward(self, x, y, gy, gx, kernel, stride, pad, mode: str) -> None:
        kernel, stride, pad = _lift_pool(x.ndim - 2, kernel, stride, pad)
        res = self.wrapper.pooling_backward(_lift_1d(x), _lift_1d(y), _lift_1d(gy), kernel,
                                            stride, pad, self.pool_modes[mode])
        gx[...] = res.reshape(gx.shape)



def _tuning(attrs) -> dict:
    """The convolution's cudnn_tune and workspace (MB), as the ops' keyword arguments."""
    return {"tune": attrs.cudnn_tune, "workspace_mb": attrs.workspace}


def _cudnn_variant(op, cls, ctx, dtype, pooling: bool = False):
    """`op` as its cuDNN variant `cls` (a subclass of type(op)) where cuDNN serves `ctx` (and,
    for `pooling`, pools there) and computes in `dtype` (half, single and double floats), unless
    op sets cudnn_off; else op."""
    if op.attrs.cudnn_off or str(dtype) not in ("float16", "float32", "float64"):
        return op
    cudnn = cudnn_for(ctx)
    if cudnn is None or (pooling and not cudnn.pools) or not cudnn.serves(ctx, dtype):
        return op
    variant = recast(op, cls)
    # what backward reads is the variant's own (class-level) choice, not op's per-instance one
    variant.__dict__.pop("backward_inputs", None)
    variant.__dict__.pop("backward_outputs", None)
    variant.cudnn = cudnn
    return variant


class CudnnConvolution(Convolution):
    """Convolution through cuDNN (`CudnnOps` or `FrontendOps`), the variant the device pass
    picks on a GPU where either cuDNN binding loads, unless cudnn_off.

    Same name, slots, attrs and JSON as Convolution; what differs is the memory contract.
    cuDNN's filter gradient reads the input data, so backward declares the data (with the
    weight) as an input, and the hidden `columns` output shrinks to one element that nothing
    writes: the plan keeps the data alive to the backward instead of the C*K-times larger
    columns.
    """

    backward_inputs = (0, 1)
    backward_outputs = ()

    def _columns_shape(self, size: int) -> tuple:
        return (1,)

    def forward(self, xp, inputs, aux, out, is_train):
        bias = None if self.attrs.no_bias else inputs[2]
        self.cudnn.conv_forward(inputs[0], inputs[1], bias, out[0], self.pad, self.stride,
                                self.dilate, self.attrs.num_group, **_tuning(self.attrs))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        gy, tuning = out_grads[0], _tuning(self.attrs)
        geometry = (self.pad, self.stride, self.dilate, self.attrs.num_group)
        if in_grads[1] is not None:
            self.cudnn.conv_backward_filter(inputs[0], gy, in_grads[1], *geometry, **tuning)
        if in_grads[0] is not None:
            self.cudnn.conv_backward_data(inputs[1], gy, in_grads[0], *geometry, **tuning)
        if not self.attrs.no_bias and in_grads[2] is not None:
            xp.sum(gy, axis=(0,) + tuple(range(2, gy.ndim)), out=in_grads[2])




class CudnnDeconvolution(Deconvolution):
    """Deconvolution through cuDNN, picked by the device pass as CudnnConvolution is. A
    deconvolution is the data gradient of the convolution from its output's space to its
    input's: forward is cuDNN's backward-data, the data gradient is cuDNN's forward, and the
    weight gradient is cuDNN's filter gradient with the roles of data and output gradient
    swapped. Backward reads the data and weight, as Deconvolution's does."""

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        pad, _ = self._pad_adj(x.shape[2:])
        self.cudnn.conv_backward_data(inputs[1], x, y, pad, self.stride, self.dilate,
                                      self.attrs.num_group, **_tuning(self.attrs))
        if not self.attrs.no_bias:
            y += bias_view(inputs[2], y.ndim)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        x, gy = inputs[0], out_grads[0]
        pad, _ = self._pad_adj(x.shape[2:])
        geometry = (pad, self.stride, self.dilate, self.attrs.num_group)
        tuning = _tuning(self.attrs)
        if in_grads[0] is not None:
            self.cudnn.conv_forward(gy, inputs[1], None, in_grads[0], *geometry, **tuning)
        if in_grads[1] is not None:
            self.cudnn.conv_backward_filter(gy, x, in_grads[1], *geometry, **tuning)
        if not self.attrs.no_bias and in_grads[2] is not None:
            xp.sum(gy, axis=(0,) + tuple(range(2, gy.ndim)), out=in_grads[2])




class CudnnPooling(Pooling):
    """Max and average pooling through cuDNN (`CudnnOps`), the variant the device pass picks on
    a GPU where CuPy's cuDNN wrapper loads (not nvidia-cudnn-frontend, which has no pooling
    backward in Python), for 'valid' windows (or global_pool) unless cudnn_off, and unless
    Pooling's own GPU kernels take the op (`pool_gpu.preferred`: max pooling, overlapping
    average pooling, where they pass their check on the GPU).

    cuDNN's backward reads the input and the output, so both are declared for backward; max
    pooling's hidden `mask` output shrinks to one element that nothing writes. Average pooling
    divides by the whole window, or with count_include_pad=False by its real elements, as the
    NumPy path does; max pooling's gradient follows cuDNN's deterministic max (MXNet on GPUs
    also pools through cuDNN).
    """

    backward_inputs = (0,)
    backward_outputs = (0,)

    def _mask_shape(self, out_shape):
        return (1,)

    def _cudnn_args(self, spatial):
        kernel, stride, pad_lo, _, _ = self._geometry(spatial)
        a = self.attrs
        mode = a.pool_type if a.pool_type == "max" or a.count_include_pad is not False else (
            "avg_exclude_pad")
        return kernel, stride, pad_lo, mode

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        self.cudnn.pool_forward(x, out[0], *self._cudnn_args(x.shape[2:]))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is None:
            return
        x = inputs[0]
        self.cudnn.pool_backward(x, outputs[0], out_grads[0], in_grads[0],
                                 *self._cudnn_args(x.shape[2:]))


# ----------------------------------------------------------------------------- activations


@variant_chooser(Convolution)
def _convolution_on(op, ctx, dtype):
    return _cudnn_variant(op, CudnnConvolution, ctx, dtype)


@variant_chooser(Deconvolution)
def _deconvolution_on(op, ctx, dtype):
    return _cudnn_variant(op, CudnnDeconvolution, ctx, dtype)


@variant_chooser(Pooling)
def _pooling_on(op, ctx, dtype):
    a = op.attrs
    if op.channels_first is not None:
        return op  # channels last: the op moves the axis around its own path
    if a.pool_type not in ("max", "avg") or not (a.global_pool
                                                 or a.pooling_convention == "valid"):
        return op  # cuDNN's windows are 'valid' ones: 'full' and 'same' stay ours
    if pool_gpu.preferred(op, ctx, dtype):
        return op  # one kernel each way, the op's numbers (see kernels/pool_gpu.py)
    return _cudnn_variant(op, CudnnPooling, ctx, dtype, pooling=True)
