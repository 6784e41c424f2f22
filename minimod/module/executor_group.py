"""MXNet's `module.executor_group` path: the group lives in `minimod.executor.group`, the
batch slicing and loading helpers in `minimod.executor.batches`."""
from ..executor.batches import (  # noqa: F401
    _load_data,
    _load_general,
    _load_label,
    _split_input_slice,
    split_batch,
)
from ..executor.group import (  # noqa: F401
    DataParallelExecutorGroup,
    _merge_multi_context,
    _prepare_group2ctxs,
)

__all__ = ["DataParallelExecutorGroup", "_load_general", "_load_data", "_load_label",
           "_merge_multi_context", "_prepare_group2ctxs", "_split_input_slice", "split_batch"]
