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
from ..graph import Entry
from ..graph.attrs import STYPE_CODES
from ..ndarray import sparse as nd_sparse
from ..ndarray import zeros as nd_zeros
from ..optimizer.base import _Builtin
from .updates import _update_params, _update_params_on_kvstore

__all__ = ["sparse_grad_params", "declared_stypes", "param_array", "lazy_row_sources",
           "update_lazily"]

_SPARSE_GRAD_OPS = {"Embedding": lambda op: op.attrs.sparse_grad,
                    "_contrib_SparseEmbedding": lambda op: True}

#: a variable's `__storage_type__` attribute (MXNet's code as a string) -> sparse type
_STYPES = {str(code): name for name, code in STYPE_CODES.items() if code}


def declared_stypes(symbol) -> dict:
    """Variable name -> 'row_sparse' or 'csr', for the variables declared with that `stype`."""
    return {node.name: _STYPES[node.attrs["__storage_type__"]]
            for node in symbol._graph.nodes if node.op is None
            and node.attrs.get("__storage_type__") in _STYPES}


def param_array(shape, dtype, stype: str):
    """Module's own copy of a parameter: a RowSparseNDArray (every row stored once written)
    for a variable declared `row_sparse`, as MXNet's Module gives it, else dense."""
    if stype == "row_sparse":
        return nd_sparse.zeros("row_sparse", shape, dtype=dtype)
    return nd_zeros(shape, dtype=dtype)


#: scaling by a number keeps a CSR input's stored columns, as the `Op.keeps_sparse`
#: operators do (sqrt, relu ...): a dot with one of them of a CSR input on the left gives
#: that input's rows
_SCALING = frozenset(("_mul_scalar", "_div_scalar"))


def _keeps_csr(node) -> bool:
    return len(node.inputs) == 1 and (node.op.keeps_sparse or node.op.name in _SCALING)

#: operators whose gradient of input 0 keeps the rows of a row-sparse head gradient
_ROWS_THROUGH = frozenset(("negative", "_mul_scalar", "_div_scalar", "_square_sum"))


#: operators whose result MXNet keeps in CSR storage when all their inputs are
_CSR_JOINING = frozenset(("elemwise_add", "elemwise_sub", "elemwise_mul"))


def _holds_csr(symbol, csr: set) -> set:
    """The nodes whose value MXNet holds in CSR storage: the variables of `csr` and what the
    `_keeps_csr` and `_CSR_JOINING` operators make of them (the graph is in topological
    order)."""
    found = set()
    for node in symbol._graph.nodes:
        if node.op is None:
            if node.name in csr:
                found.add(node)
        elif node.inputs and all(e.node in found for e in node.inputs) and (
                node.op.name in _CSR_JOINING or _keeps_csr(node)):
            found.add(node)
    return found


def _csr_source(node):
    """The CSR variable whose stored columns a dot's left operand `node` has: itself, or the
    variable under a chain of `_keeps_csr` operators; else `node` (computed otherwise)."""
    start = node
    while node.op is not None and _keeps_csr(node):
        node = node.inputs[0].node
    return node if node.op is None else start


def _input_rows(node, slot: int, head, holds_csr: set):
    """How input `slot` of `node` gets its gradient in MXNet, given `head`, how the node's
    output gets its own: "dense", or a list of (row source node, input_dim) when row-sparse.
    An embedding's rows are the indices it looks up (input_dim: the clip); `dot(x, w)` with
    x holding CSR data gives w the rows of x's stored columns (input_dim None); negation,
    scaling and a square_sum over axis 1 pass a row-sparse head's rows through."""
    name = node.op.name
    if _SPARSE_GRAD_OPS.get(name, lambda op: False)(node.op):
        return [(node.inputs[0].node, node.op.attrs.input_dim)] if slot == 1 else "dense"
    if name == "dot" and slot == 1 and node.inputs[0].node in holds_csr and not (
            node.op.attrs.transpose_a or node.op.attrs.transpose_b):
        return [(_csr_source(node.inputs[0].node), None)]
    if name in _ROWS_THROUGH and slot == 0 and (name != "_square_sum" or (
            node.op.attrs.axis in ((1,), (-1,)) and not node.op.attrs.exclude)):
        return head
    return "dense"


def _sparse_lookups(symbol) -> dict:
    """weight name -> [(row source node, input_dim)] for the variables MXNet gives a
    row-sparse gradient (`_input_rows`, summed over their readers from the heads back; one
    dense part makes the sum dense, as a weight that another operator also reads gets a dense
    gradient in MXNet, or one holding every row)."""
    holds_csr = _holds_csr(symbol, {k for k, v in declared_stypes(symbol).items()
                                    if v == "csr"})
    grads: dict = {}  # Entry -> "dense" or [(row source node, input_dim)]

    def add(entry, rows):
        old = grads.get(entry, [])
        grads[entry] = "dense" if "dense" in (old, rows) else old + rows

    for node in reversed(symbol._graph.nodes):
        if node.op is None:
            continue
        outs = [grads.get(Entry(node, i), "dense") for i in range(node.op.num_outputs())]
        head = outs[0] if len(outs) == 1 else "dense"
        for slot, entry in enumerate(node.inputs):
            add(entry, _input_rows(node, slot, head, holds_csr))
    return {e.node.name: rows for e, rows in grads.items()
            if e.node.op is None and rows != "dense"}


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
            why = ("its rows come from '%s', computed in the graph, not an input"
                   % computed[0])
        if why:
            reason, fix = _why_sparse(lookups)
            raise MXNetError(
                "init_optimizer: MXNet gives '%s' a row-sparse gradient (%s), and %s with "
                "lazy_update=True updates only the rows each batch touches; minimod cannot "
                "here (%s). Pass lazy_update=False to the optimizer (MXNet's dense update, "
                "the same numbers in both) or %s"
                % (name, reason, type(optimizer).__name__, why, fix))
        sources[name] = [(data.name, input_dim) for data, input_dim in lookups]
    return sources


def _why_sparse(lookups: list) -> tuple:
    """(why MXNet's gradient is row-sparse, how to make it dense) for an error message."""
    for source, input_dim in lookups:
        if input_dim is None:
            return ("as the right operand of dot with '%s', which holds CSR data" % source.name,
                    "feed the dot dense data (no stype='csr' on its input)")
    return ("as the weight of an Embedding with sparse_grad=True",
            "build the Embedding with sparse_grad=False")


def _batch_rows(execs, lookups: list):
    """The sorted rows the last batch touched on the executors `execs`, as a host array: the
    indices an embedding looked up, or the columns of a CSR input that hold a value (an
    explicitly stored zero, which MXNet counts, is not seen in the dense batch)."""
    found = []
    for exe in execs:
        for data_name, input_dim in lookups:
            data = exe.arg_dict[data_name]._data
            if input_dim is None:
                xp = backend.array_module_of(data)
                used = xp.any(data.reshape(data.shape[0], -1) != 0, axis=0)
                found.append(np.flatnonzero(backend.asnumpy(used)))
                continue
            ids = backend.asnumpy(data).astype("int64").ravel()
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
