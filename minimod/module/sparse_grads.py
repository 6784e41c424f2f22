"""Parameters that MXNet trains with a row-sparse gradient, and MXNet's lazy update of them.

In MXNet, `Embedding(sparse_grad=True)` and `contrib.SparseEmbedding` give their weight a
row-sparse gradient: only the rows the batch looks up. SGD (and ccSGD, LARS, LBSGD) and Adam,
with their default `lazy_update=True`, then update only those rows: the others keep their
values, their momentum and their Adam moments, and get no weight decay that step. Every other
optimizer, and these with `lazy_update=False`, update the whole table as for a dense gradient
(each case checked against MXNet 1.9.1 in tests/module/test_sparse_grad.py).

minimod's gradients are dense, and the rows are known from the batch: the embedding's
`data` input holds them (clipped to the table, as the lookup clips). So where MXNet's update
is lazy, Module updates such a weight with `Updater.update_rows`: the optimizer's own update
on the gathered rows of weight, gradient and state, written back (SGD, ccSGD and Adam, whose
lazy updates are their dense formula row by row). The rows are the union over the devices'
batches, as MXNet's kvstore sums row-sparse gradients. Refused with what to change instead:
LARS and LBSGD (their step is scaled by norms of the whole table), a kvstore written in
Python that runs the optimizer itself (minimod's 'local', 'device' and 'dist_sync' stores
update the rows through `push_rows`, a dist store on the union of every worker's rows), and
an embedding whose indices are computed inside the graph rather than given as an input.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..base import MXNetError
from ..optimizer.base import _Builtin
from .updates import _update_params, _update_params_on_kvstore

__all__ = ["sparse_grad_params", "lazy_row_sources", "update_lazily"]

_SPARSE_GRAD_OPS = {"Embedding": lambda op: op.attrs.sparse_grad,
                    "_contrib_SparseEmbedding": lambda op: True}


def _sparse_lookups(symbol) -> dict:
    """weight name -> [(data node, input_dim)] of the embeddings that read it with a sparse
    gradient, for the weights nothing else reads (a weight that another node also reads gets
    a dense gradient in MXNet too)."""
    lookups, dense = {}, set()
    for node in symbol._graph.nodes:
        if node.op is None:
            continue
        is_sparse = _SPARSE_GRAD_OPS.get(node.op.name, lambda op: False)(node.op)
        for slot, entry in enumerate(node.inputs):
            if entry.node.op is not None:
                continue
            if is_sparse and slot == 1:
                lookups.setdefault(entry.node.name, []).append(
                    (node.inputs[0].node, node.op.attrs.input_dim))
            else:
                dense.add(entry.node.name)
    return {name: found for name, found in lookups.items() if name not in dense}


def sparse_grad_params(symbol) -> list:
    """Names of the variables that MXNet gives a row-sparse gradient."""
    return sorted(_sparse_lookups(symbol))


def _lazy_form(optimizer, name: str) -> str:
    """How MXNet's update of parameter `name` with a row-sparse gradient differs from the
    dense one: the optimizer's `_sparse_form` ("" when it does not, "rows" for the dense
    formula on the batch's rows, else why it cannot be written so)."""
    if not isinstance(optimizer, _Builtin):
        return ""
    form = optimizer._sparse_form(optimizer.wd * optimizer.wd_mult.get(name, 1.0))
    # AdaGrad with weight decay, which MXNet refuses on a row-sparse gradient, updates densely
    return form if form == "rows" or getattr(optimizer, "lazy_update", False) else ""


def lazy_row_sources(symbol, optimizer, kvstore, update_on_kvstore: bool) -> dict:
    """param name -> [(data input name, input_dim)] for the parameters Module must update
    lazily under `optimizer`; raises MXNetError, saying what to change, where minimod cannot
    give MXNet's lazy numbers."""
    sources = {}
    for name, lookups in _sparse_lookups(symbol).items():
        form = _lazy_form(optimizer, name)
        if not form:
            continue
        why = form if form != "rows" else ""
        if not why and kvstore is not None and not hasattr(kvstore, "push_rows") and (
                update_on_kvstore or "dist" in kvstore.type):
            why = "the update runs inside a %s kvstore, which takes no rows" % kvstore.type
        computed = [data.name for data, _ in lookups if data.op is not None]
        if not why and computed:
            why = "its indices are computed in the graph ('%s'), not an input" % computed[0]
        if why:
            raise MXNetError(
                "init_optimizer: '%s' is the weight of an Embedding with sparse_grad=True, "
                "and %s with lazy_update=True updates only the rows each batch looks up; "
                "minimod cannot here (%s). Pass lazy_update=False to the optimizer (MXNet's "
                "dense update, the same numbers in both) or build the Embedding with "
                "sparse_grad=False" % (name, type(optimizer).__name__, why))
        sources[name] = [(data.name, input_dim) for data, input_dim in lookups]
    return sources


def _batch_rows(execs, lookups: list):
    """The sorted table rows the last batch looked up on the executors `execs`, as a host
    array."""
    found = []
    for exe in execs:
        for data_name, input_dim in lookups:
            ids = backend.asnumpy(exe.arg_dict[data_name]._data).astype("int64").ravel()
            found.append(ids.clip(0, input_dim - 1))
    return np.unique(np.concatenate(found))  # the rows are few: the union is taken on the host


def update_lazily(group, updater, kvstore, update_on_kvstore: bool, sources: dict) -> None:
    """Module.update where some weights have lazy row-sparse updates (`sources`, from
    `lazy_row_sources`): the other weights go through `_update_params_on_kvstore` /
    `_update_params` as in any step; the lazy ones are summed in the kvstore when there is one
    and updated on their batch's rows (with a kvstore, the union over the devices and workers,
    as it sums row-sparse gradients; without, each device's own). With `update_on_kvstore`
    the store updates them through `push_rows`."""
    names = group.param_names
    lazy = [i for i, grads in enumerate(group.grad_arrays)
            if grads[0] is not None and names[i] in sources]
    others = [[None] * len(grads) if i in lazy else grads  # updates.py skips a None gradient
              for i, grads in enumerate(group.grad_arrays)]
    if update_on_kvstore:
        _update_params_on_kvstore(group.param_arrays, others, kvstore, names)
        for i in lazy:
            kvstore.push_rows(names[i], group.grad_arrays[i],
                              _batch_rows(group.execs, sources[names[i]]))
            kvstore.pull(names[i], out=group.param_arrays[i])
        return
    num_device = len(group.contexts)
    _update_params(group.param_arrays, others, updater, num_device, kvstore, names)
    if kvstore and lazy:
        kvstore.pushpull([names[i] for i in lazy], [group.grad_arrays[i] for i in lazy])
    union = getattr(kvstore, "row_union", lambda rows: rows)
    for i in lazy:
        summed = union(_batch_rows(group.execs, sources[names[i]])) if kvstore else None
        for k, (weight, grad) in enumerate(zip(group.param_arrays[i], group.grad_arrays[i])):
            rows = summed if kvstore else _batch_rows(group.execs[k:k + 1], sources[names[i]])
            with backend.device_scope(weight.context):
                updater.update_rows(i * num_device + k, grad, weight,
                                    backend.to_context(rows, weight.context))
