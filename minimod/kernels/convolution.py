"""Convolution's batch-last form: data, output or both stored (C, *spatial, N).

Convolution's im2col already works batch-last for outputs narrower than `CN_MIN_WIDTH`; this
form skips the conversions at its boundaries. A batch-last output is the GEMM's result as it
stands, written in place; batch-last data is read through views; the work layout is always
batch-last here (never channels-batch), so wide outputs sum their GEMMs in another order than
the reference op does, which can change the last bits.
"""
from __future__ import annotations

from ..ops.conv_helpers import from_work, to_work, work_shape
from ..ops.convolution import Convolution
from .layout import BatchLast, form_of

__all__ = ["BatchLastConvolution"]


@form_of(Convolution)
class BatchLastConvolution(BatchLast, Convolution):
    """Convolution with its data, its output or both stored batch-last."""

    def forward(self, xp, inputs, aux, out, is_train):
        x, y = inputs[0], out[0]
        n = x.shape[-1] if self.data_last else x.shape[0]
        out_spatial = y.shape[1:-1] if self.out_last else y.shape[2:]
        xw = to_work(self, xp, "x", x, self.pad, False, copy=False, last=self.data_last)
        direct = self.out_last and y.flags.c_contiguous
        res = self._columns_gemm(xp, xw, inputs, out[1], out_spatial, n, False,
                                 into=y if direct else None)
        if direct:
            return
        work = res.reshape(work_shape(res.shape[0], n, out_spatial, False))
        y[...] = work if self.out_last else from_work(xp, work, False)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        gy, dx = out_grads[0], in_grads[0]
        n = gy.shape[-1] if self.out_last else gy.shape[0]
        out_spatial = gy.shape[1:-1] if self.out_last else gy.shape[2:]
        gw = to_work(self, xp, "gy", gy, (0,) * len(out_spatial), False,
                     copy=not (self.out_last and gy.flags.c_contiguous), last=self.out_last)
        spatial = None
        if dx is not None:
            spatial = dx.shape[1:-1] if self.data_last else dx.shape[2:]
        dxw = self._grads_from_work(xp, gw, inputs[1], outputs[1], in_grads, out_spatial, n,
                                    False, spatial)
        if dxw is not None:
            dx[...] = dxw if self.data_last else from_work(xp, dxw, False)
