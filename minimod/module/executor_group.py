"""MXNet's `module.executor_group` path: the group lives in `minimod.executor.group`."""
from ..executor.group import (  # noqa: F401
                              DataParallelExecutorGroup,
                              _load_data,
                              _load_general,
                              _load_label,
                              _merge_multi_context,
                              _prepare_group2ctxs,
                              _split_input_slice,
                              split_batch,
)

__all__ = ["DataParallelExecutorGroup", "_load_general", "_load_data", "_load_label",
           "_merge_multi_context", "_prepare_group2ctxs", "_split_input_slice", "split_batch"]
