"""getnnz, edge_id and retain (minimod/ops/sparse_structure.py, ndarray/sparse/structure.py)
as MXNet 1.9.1 runs them, written once for both engines: `run(mx)` gives every result by case
name (MXNet under gen_structure_golden.py, minimod under tests/ops/test_sparse_structure.py).
The first matrix stores an explicit zero at (1, 0), which MXNet counts and reports as an edge
of weight 0; graphs get one without stored zeros (minimod's executors hold dense values)."""
import numpy as np

DATA = np.array([1, 0, 3, 4], np.float32)
INDICES = np.array([1, 0, 2, 2])
INDPTR = np.array([0, 1, 3, 3, 4])
U = [0, 1, 1, 3, 2, 3]
V = [1, 0, 1, 2, 0, 0]


def run(mx):
    out = {}
    for dtype in ("float32", "float64"):
        csr = mx.nd.sparse.csr_matrix((DATA.astype(dtype), INDICES, INDPTR), shape=(4, 3))
        out["getnnz/%s/all" % dtype] = mx.nd.contrib.getnnz(csr).asnumpy()
        out["getnnz/%s/rows" % dtype] = mx.nd.contrib.getnnz(csr, axis=1).asnumpy()
        out["edge_id/%s" % dtype] = mx.nd.contrib.edge_id(
            csr, mx.nd.array(U), mx.nd.array(V)).asnumpy()
        out["edge_id/%s/int64" % dtype] = mx.nd.contrib.edge_id(
            csr, mx.nd.array(U, dtype="int64"), mx.nd.array(V, dtype="int64")).asnumpy()
    rsp = mx.nd.sparse.row_sparse_array((np.arange(9, dtype=np.float32).reshape(3, 3),
                                         [0, 1, 3]), shape=(5, 3))
    out["retain/nd"] = mx.nd.sparse.retain(rsp, mx.nd.array([3, 0, 4])).asnumpy()
    net = mx.sym.sparse.retain(mx.sym.var("x", stype="row_sparse"), mx.sym.var("i"))
    exe = net.simple_bind(mx.cpu(), x=(5, 3), i=(3,), grad_req="null",
                          stype_dict={"x": "row_sparse", "i": "default"})
    exe.arg_dict["x"][:] = rsp
    exe.arg_dict["i"][:] = mx.nd.array([3, 0, 4])
    out["retain/sym"] = exe.forward()[0].asnumpy()
    plain = mx.nd.sparse.csr_matrix((np.array([1, 2, 3, 4], np.float32), INDICES, INDPTR),
                                    shape=(4, 3))
    for axis in (None, 1):
        exe = mx.sym.contrib.getnnz(mx.sym.var("c", stype="csr"), axis=axis).bind(
            mx.cpu(), {"c": plain})
        out["getnnz/sym/%s" % axis] = exe.forward()[0].asnumpy()
    exe = mx.sym.contrib.edge_id(mx.sym.var("c", stype="csr"), mx.sym.var("u"),
                                 mx.sym.var("v")).bind(
        mx.cpu(), {"c": plain, "u": mx.nd.array(U), "v": mx.nd.array(V)})
    out["edge_id/sym"] = exe.forward()[0].asnumpy()
    return out
