"""The fused RNN op through the executor: its hidden `reserve` output is planned memory, so what
backward reads belongs to the executor that ran the forward, and the symbol JSON still counts
MXNet's outputs only."""
import json

import numpy as np
import pytest

import minimod as mx
from minimod import backend

H, N, C = 5, 3, 4


def _symbol(mode, layers=2, bidirectional=True, p=0.0, state_outputs=False):
    extra = {"state_cell": mx.sym.Variable("cell")} if mode == "lstm" else {}
    return mx.sym.RNN(data=mx.sym.Variable("data"), parameters=mx.sym.Variable("params"),
                      state=mx.sym.Variable("state"), state_size=H, num_layers=layers,
                      mode=mode, bidirectional=bidirectional, p=p, state_outputs=state_outputs,
                      name="rnn", **extra)


def _shapes(mode, steps, layers=2, dirs=2):
    shapes = dict(data=(steps, N, C), state=(layers * dirs, N, H))
    if mode == "lstm":
        shapes["cell"] = (layers * dirs, N, H)
    return shapes


def _fill(exe, seed):
    rng = np.random.RandomState(seed)
    for name in sorted(exe.arg_dict):
        exe.arg_dict[name][:] = rng.uniform(-0.5, 0.5, exe.arg_dict[name].shape)
    return [mx.nd.array(rng.uniform(-1, 1, o.shape)) for o in exe.outputs]


def _grads(exe):
    return {k: g.asnumpy().copy() for k, g in exe.grad_dict.items()}


def _step(exe, heads, seed=None, is_train=True):
    if seed is not None:
        backend.seed(seed)
    exe.forward(is_train=is_train)
    exe.backward(heads)
    return _grads(exe)


def _assert_same(got, want):
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_json_counts_only_the_visible_outputs():
    sym = _symbol("lstm", state_outputs=True)
    assert sym.list_outputs() == ["rnn_output", "rnn_state_output", "rnn_statecell_output"]
    graph = json.loads(sym.tojson())
    # data, params, state, cell: one entry each; RNN: MXNet's 3, not the hidden reserve
    assert graph["node_row_ptr"] == [0, 1, 2, 3, 4, 7]
    _, out_shapes, _ = sym.infer_shape(**_shapes("lstm", 6))
    assert out_shapes == [(6, N, 2 * H), (4, N, H), (4, N, H)]


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_buckets_sharing_a_pool_match_running_alone(mode):
    sym = _symbol(mode)
    alone_a = sym.simple_bind(mx.cpu(), grad_req="write", **_shapes(mode, 6))
    alone_b = sym.simple_bind(mx.cpu(), grad_req="write", **_shapes(mode, 4))
    heads_a, heads_b = _fill(alone_a, 1), _fill(alone_b, 2)
    want_a, want_b = _step(alone_a, heads_a), _step(alone_b, heads_b)
    # one pool, one op instance, as BucketingModule binds buckets: each forward is followed by
    # its own backward, and the reserve of one bucket is the other's scratch in between
    exe_a = sym.simple_bind(mx.cpu(), grad_req="write", **_shapes(mode, 6))
    exe_b = sym.simple_bind(mx.cpu(), grad_req="write", shared_exec=exe_a, **_shapes(mode, 4))
    assert exe_b._pool is exe_a._pool
    _fill(exe_a, 1)
    _fill(exe_b, 2)
    for _ in range(2):
        _assert_same(_step(exe_a, heads_a), want_a)
        _assert_same(_step(exe_b, heads_b), want_b)


@pytest.mark.parametrize("p", [0.0, 0.4])
def test_interleaved_executors_keep_their_own_reserve(p):
    # two executors of one symbol (one op instance) with their own memory: forward(A),
    # forward(B), backward(A), backward(B) gives each the gradients it gets alone, dropout
    # masks included (same seed before each forward)
    sym = _symbol("lstm", p=p)
    exe_a = sym.simple_bind(mx.cpu(), grad_req="write", **_shapes("lstm", 6))
    exe_b = sym.simple_bind(mx.cpu(), grad_req="write", **_shapes("lstm", 4))
    heads_a, heads_b = _fill(exe_a, 1), _fill(exe_b, 2)
    want_a, want_b = _step(exe_a, heads_a, seed=11), _step(exe_b, heads_b, seed=12)
    backend.seed(11)
    exe_a.forward(is_train=True)
    backend.seed(12)
    exe_b.forward(is_train=True)
    exe_a.backward(heads_a)
    got_a = _grads(exe_a)
    exe_b.backward(heads_b)
    _assert_same(got_a, want_a)
    _assert_same(_grads(exe_b), want_b)


def test_backward_differentiates_the_forward_it_follows():
    # two same-shaped executors on one pool put their outputs at one address: a backward after
    # B's inference forward must use B's activations, not what A's training forward left
    sym = _symbol("gru")
    exe_a = sym.simple_bind(mx.cpu(), grad_req="write", **_shapes("gru", 5))
    exe_b = sym.simple_bind(mx.cpu(), grad_req="write", shared_exec=exe_a, **_shapes("gru", 5))
    heads_a, heads_b = _fill(exe_a, 1), _fill(exe_b, 2)
    alone_b = sym.simple_bind(mx.cpu(), grad_req="write", **_shapes("gru", 5))
    _fill(alone_b, 2)
    want_b = _step(alone_b, heads_b)
    _step(exe_a, heads_a)
    _assert_same(_step(exe_b, heads_b, is_train=False), want_b)
    # and within one executor: train on A's data, infer on B's, backward follows the latter
    for name, arr in alone_b.arg_dict.items():
        exe_a.arg_dict[name][:] = arr
    exe_a.forward(is_train=True, data=mx.nd.array(np.ones((5, N, C))))
    exe_a.forward(is_train=False, data=alone_b.arg_dict["data"])
    exe_a.backward(heads_b)
    _assert_same(_grads(exe_a), want_b)
