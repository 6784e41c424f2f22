"""Row-sparse and CSR arrays given to `bind` (minimod/executor/sparse_binding.py): the executor
computes on dense twins and keeps the user's arrays in step, so they behave as MXNet's bound
sparse arrays do: gradients arrive in them, in their storage type; writes into them reach the
next forward. The reference is the same net bound on dense arrays."""
import numpy as np
import pytest

import minimod as mx

RNG = np.random.RandomState(0)
A = RNG.randn(4, 3).astype(np.float32)
A[1] = 0
B = RNG.randn(4, 3).astype(np.float32)
W = RNG.randn(4, 3).astype(np.float32)


def _net():
    a, b, w = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("w")
    return mx.sym.MakeLoss(mx.sym.sum(mx.sym.broadcast_mul(a * b + a, w) * 3))


def _bound(stypes, grad_req="write"):
    args = {"a": mx.nd.array(A), "b": mx.nd.array(B), "w": mx.nd.array(W)}
    args = {k: v.tostype(stypes.get(k, "default")) for k, v in args.items()}
    grads = {k: mx.nd.zeros((4, 3)).tostype(stypes.get(k, "default")) for k in args}
    exe = _net().bind(mx.cpu(), args=args, args_grad=grads, grad_req=grad_req)
    return exe, args, grads


SPARSE = {"a": "row_sparse", "b": "csr"}


def test_gradients_arrive_in_the_sparse_arrays_in_their_storage_type():
    exe, args, grads = _bound(SPARSE)
    ref, _, ref_grads = _bound({})
    for e in (exe, ref):
        e.forward(is_train=True)
        e.backward()
    for name in "abw":
        assert grads[name].stype == SPARSE.get(name, "default")
        assert exe.grad_dict[name] is grads[name] and exe.arg_dict[name] is args[name]
        np.testing.assert_allclose(grads[name].asnumpy(), ref_grads[name].asnumpy(),
                                   rtol=1e-6)
    assert np.abs(grads["a"].asnumpy()).sum() > 0  # not the zeros they were bound with


def test_writes_into_a_bound_sparse_argument_reach_the_next_forward():
    exe, args, _ = _bound(SPARSE)
    exe.forward()
    before = exe.outputs[0].asnumpy().copy()
    (args["a"] * 2).copyto(args["a"])
    exe.forward()
    ref, ref_args, _ = _bound({})
    ref_args["a"][:] = A * 2
    ref.forward()
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), ref.outputs[0].asnumpy(), rtol=1e-6)
    assert not np.allclose(exe.outputs[0].asnumpy(), before)
    # forward's keyword arrays are written into the user's array first, as in MXNet
    exe.forward(a=mx.nd.array(A).tostype("row_sparse"))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), before, rtol=1e-6)
    np.testing.assert_array_equal(args["a"].asnumpy(), A)


@pytest.mark.parametrize("run", ["forward_backward", "forward_then_backward"])
def test_grad_req_add_accumulates_and_sees_the_users_reset(run):
    exe, _, grads = _bound(SPARSE, grad_req="add")
    ref, _, ref_grads = _bound({}, grad_req="add")

    def step(e):
        if run == "forward_backward":
            e.forward_backward()
        else:
            e.forward(is_train=True)
            e.backward()

    for e in (exe, ref):
        step(e)
        step(e)
    for name in "ab":
        np.testing.assert_allclose(grads[name].asnumpy(), ref_grads[name].asnumpy(),
                                   rtol=1e-6)
    mx.nd.zeros((4, 3)).tostype("row_sparse").copyto(grads["a"])
    ref_grads["a"][:] = 0
    step(exe)
    step(ref)
    np.testing.assert_allclose(grads["a"].asnumpy(), ref_grads["a"].asnumpy(), rtol=1e-6)


def test_dense_bindings_have_no_twins():
    exe, _, _ = _bound({})
    assert exe._sparse is None
