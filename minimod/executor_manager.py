"""MXNet's `executor_manager` module path, kept for code that imports `_split_input_slice`."""
from .executor.batches import _split_input_slice, split_batch  # noqa: F401

__all__ = ["_split_input_slice", "split_batch"]
