"""Raw CUDA kernels that serve a GPU only once checked there: the base of `softmax_rows`'
RowSoftmax, `pool_max`'s WindowMax (and `pool_overlap`'s WindowPool) and `embedding`'s
TableKernels.

Those kernels were written without a GPU, so before one serves a (device, dtype) it runs on
test data on that device and must give the op's own numbers; a pair where it does not (or
fails to compile, or raises) keeps the op's path, and `status()` says why. The check runs
once per pair, at bind time, outside any CUDA graph capture.
"""
from __future__ import annotations

import numpy as np

__all__ = ["CheckedKernels"]


class CheckedKernels:
    """The functions `KERNELS` (key -> name) of CUDA source `SOURCE`, compiled once per
    array module, and the check of each (device, dtype): `_compare(xp, dtype, *args)`
    returns "" when the kernels give the op's numbers there, else why not. `unchecked` and `served`
    are the words `status()` uses before any check and for a pair the kernels serve."""

    SOURCE = ""
    KERNELS: dict = {}
    unchecked = "not checked yet"
    served = "kernels"

    def __init__(self):
        self.functions: dict = {}  # array module -> {key: kernel}
        self.checked: dict = {}  # (device id, dtype char) -> "" or why not

    def function(self, xp, key):
        """Kernel `key` on array module `xp` (the whole source compiled on first use)."""
        per_module = self.functions.get(xp)
        if per_module is None:
            module = xp.RawModule(code=self.SOURCE)
            per_module = self.functions[xp] = {k: module.get_function(name)
                                               for k, name in self.KERNELS.items()}
        return per_module[key]

    def serves(self, xp, device_id: int, dtype, *args) -> bool:
        """Whether the kernels may serve float32 or float64 `dtype` on gpu(`device_id`),
        checked there on first asking (`_compare(xp, dtype, *args)`)."""
        char = np.dtype(dtype).char
        if char not in "fd":
            return False
        key = (device_id, char)
        if key not in self.checked:
            with xp.cuda.Device(device_id):  # on the GPU it is asked for
                self.checked[key] = self._check(xp, np.dtype(dtype), *args)
        return not self.checked[key]

    def _check(self, xp, dtype, *args) -> str:
        try:
            return self._compare(xp, dtype, *args)
        except Exception as err:  # noqa: BLE001 - any failure keeps the op's path
            return "%s: %s" % (type(err).__name__, err)

    def _compare(self, xp, dtype, *args) -> str:
        """"" when the kernels give the op's numbers for `dtype` on `xp`'s current device,
        else why not; an exception counts as a 'why not'."""
        raise NotImplementedError

    def status(self) -> str:
        if not self.checked:
            return self.unchecked
        return "; ".join("gpu(%d) %s: %s" % (dev, np.dtype(char).name, why or self.served)
                         for (dev, char), why in sorted(self.checked.items()))
