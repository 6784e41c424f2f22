"""Row-sparse and CSR arrays given to `bind`: MXNet's executor computes on those arrays
themselves; minimod's computes on dense arrays, so it binds a dense twin of each and keeps
the two in step around every run:

- arguments and aux states: the twin is refreshed from the user's array before each forward
  (after `forward(**kwargs)` has written into it), and aux states are written back after it
  (an op such as BatchNorm updates them);
- gradients: written back into the user's array, in its storage type, after each backward;
  for grad_req 'add' the twin is first refreshed from it, so that the user's own changes
  between steps (zeroing it, say) count, as they do in MXNet.

The executor's `arg_dict` / `grad_dict` / `aux_dict` hold the user's arrays, as in MXNet;
its outputs are dense. An executor bound on dense arrays only has no `SparseBindings`
(`SparseBindings.of` gives None) and pays nothing.
"""
from __future__ import annotations

from typing import Optional, Sequence

from .. import backend
from ..ndarray.ndarray import NDArray

__all__ = ["SparseBindings"]


def _is_sparse(array) -> bool:
    return isinstance(array, NDArray) and array.stype != "default"


def _twins(arrays: Sequence) -> tuple:
    """(the arrays with each sparse one replaced by a dense copy, [(user's, twin)])."""
    dense, pairs = [], []
    for array in arrays:
        if _is_sparse(array):
            twin = array.tostype("default")
            pairs.append((array, twin))
            array = twin
        dense.append(array)
    return dense, pairs


class SparseBindings:
    """The dense twins of an executor's sparse arrays (see the module docstring)."""

    def __init__(self, arg_arrays: Sequence, grad_arrays: Sequence, aux_arrays: Sequence,
                 grad_req: dict, arg_names: Sequence[str]):
        self.args, self._args = _twins(arg_arrays)
        self.aux, self._aux = _twins(aux_arrays)
        self.grads, self._written, self._added = [], [], []
        for name, grad in zip(arg_names, grad_arrays):
            if _is_sparse(grad):
                twin = grad.tostype("default")
                req = grad_req.get(name, "null")
                if req != "null":
                    self._written.append((grad, twin))
                if req == "add":
                    self._added.append((grad, twin))
                grad = twin
            self.grads.append(grad)

    @classmethod
    def of(cls, arg_arrays, grad_arrays, aux_arrays, grad_req, arg_names
           ) -> Optional["SparseBindings"]:
        """The bindings of these arrays, or None when every one is dense."""
        if not any(_is_sparse(a) for a in (*arg_arrays, *grad_arrays, *aux_arrays)):
            return None
        return cls(arg_arrays, grad_arrays, aux_arrays, grad_req, arg_names)

    @staticmethod
    def _pull(pairs) -> None:
        for user, twin in pairs:
            with backend.device_scope(twin.context):
                backend.copy_into(twin._data, user._data)  # the user's dense view

    @staticmethod
    def _push(pairs) -> None:
        for user, twin in pairs:
            twin.copyto(user)  # the user's array keeps its storage type

    def before_forward(self) -> None:
        self._pull(self._args)
        self._pull(self._aux)

    def after_forward(self) -> None:
        self._push(self._aux)

    def before_backward(self) -> None:
        self._pull(self._added)

    def after_backward(self) -> None:
        self._push(self._written)
