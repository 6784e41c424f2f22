"""`mx.sym.sparse`: MXNet's constructors for graphs over sparse inputs (`mx.sym.sparse.dot`,
`mx.sym.sparse.square`, ...). Every registered operator is here under its own name and
builds the same node as `mx.sym.<name>`, and the operators MXNet registers as `_sparse_X`
under X (`mx.sym.sparse.retain`): minimod's graphs compute on dense arrays, so a
`csr` data variable is fed its batches' dense values and a `row_sparse` weight its dense
table. What the storage types change is kept where MXNet's numbers depend on it: Module
returns a `row_sparse` variable's parameter as a RowSparseNDArray, and updates a weight that
MXNet gives a row-sparse gradient (see minimod/module/sparse_grads.py) only on its rows."""
from ..ops.registry import list_ops
from .namespaces import constructor

_PREFIX = "_sparse_"


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError("module 'minimod.symbol.sparse' has no attribute '%s'" % name)
    ops = list_ops()
    op_name = _PREFIX + name if _PREFIX + name in ops else name
    if op_name not in ops:
        raise AttributeError("module 'minimod.symbol.sparse' has no attribute '%s'" % name)
    fn = constructor(name, op_name)
    globals()[name] = fn
    return fn


def __dir__():
    ops = list_ops()
    return sorted(set(globals()) | set(ops)
                  | {k[len(_PREFIX):] for k in ops if k.startswith(_PREFIX)})
