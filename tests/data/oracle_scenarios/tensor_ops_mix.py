"""Tensor operators chained in one training graph, so the planner's in-place and view choices
meet them together (3 SGD steps, input and weight gradients): take, pick, gather_nd, where,
topk values, sort, slice_like, broadcast_like, tile, repeat, reverse, stack, swapaxes,
depth_to_space / space_to_depth, batch_dot, linalg.gemm2, norm, log_softmax with a
temperature, softmin, smooth_l1, hard_sigmoid, erf, reshape_like and expand_dims."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import det_params, to_nd, train_steps  # noqa: E402

N = 4


def _net(mx):
    data = mx.sym.Variable("data")  # (N, 8)
    h = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")  # (N, 16)
    cube = mx.sym.Reshape(h, shape=(0, 4, 2, 2))
    d2s = mx.sym.depth_to_space(cube, block_size=2)  # (N, 1, 4, 4)
    s2d = mx.sym.space_to_depth(d2s * 2, block_size=2)  # (N, 4, 2, 2)
    mat = mx.sym.Reshape(s2d, shape=(0, 4, 4))
    bd = mx.sym.batch_dot(mat, mx.sym.swapaxes(mat, 1, 2))  # (N, 4, 4)
    g2 = mx.sym.linalg.gemm2(bd, mat, alpha=0.5)
    rows = mx.sym.take(mx.sym.Reshape(g2, shape=(-1, 4)), mx.sym.Variable("idx"))  # (6, 4)
    picked = mx.sym.pick(rows, mx.sym.Variable("pick_idx"), axis=1, keepdims=True)  # (6, 1)
    gathered = mx.sym.gather_nd(g2, mx.sym.Variable("nd_idx"))  # (5,)
    top = mx.sym.topk(rows, k=2, axis=1, ret_typ="value")  # (6, 2)
    srt = mx.sym.sort(rows, axis=0, is_ascend=False)
    sl = mx.sym.slice_like(srt, top)  # (6, 2)
    cond = mx.sym.where(sl > 0, top, mx.sym.erf(sl))
    tiled = mx.sym.tile(mx.sym.reverse(cond, axis=1), reps=(1, 2))  # (6, 4)
    rep = mx.sym.repeat(picked, repeats=4, axis=1)  # (6, 4)
    bl = mx.sym.broadcast_like(mx.sym.expand_dims(mx.sym.sum(gathered), axis=0), tiled)
    st = mx.sym.stack(tiled, rep, bl, axis=1)  # (6, 3, 4)
    nrm = mx.sym.norm(st, ord=2, axis=2)  # (6, 3)
    ls = mx.sym.log_softmax(st, axis=-1, temperature=2.0)
    sm = mx.sym.softmin(ls, axis=1)
    feat = mx.sym.concat(mx.sym.Flatten(sm), nrm, mx.sym.smooth_l1(nrm, scalar=2.0),
                         mx.sym.hard_sigmoid(nrm, alpha=0.3, beta=0.4), dim=1)  # (6, 21)
    first = mx.sym.slice_axis(feat, axis=0, begin=0, end=4)  # (4, 21)
    shaped = mx.sym.reshape_like(mx.sym.Reshape(first * 1.5, shape=(-1,)), first)
    fc = mx.sym.FullyConnected(shaped, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def run(mx):
    rng = np.random.RandomState(23)
    x = rng.uniform(-1, 1, size=(3 * N, 8)).astype(np.float32)
    y = rng.randint(0, 3, size=(3 * N,)).astype(np.float32)
    idx = np.array([0, 5, 3, 15, 8, 8], np.float32)
    pick_idx = np.array([1, 0, 3, 2, 2, 1], np.float32)
    nd_idx = np.array([[0, 1, 3, 3, 2], [1, 2, 0, 3, 3], [2, 0, 1, 3, 1]], np.float32)
    with mx.name.NameManager():
        sym = _net(mx)
    shapes = dict(data=(N, 8), idx=(6,), pick_idx=(6,), nd_idx=(3, 5), softmax_label=(N,))
    args, auxs = det_params(sym, scale=0.5, **shapes)
    names = ["data", "idx", "pick_idx", "nd_idx"]
    mod = mx.mod.Module(sym, data_names=names, context=mx.cpu())
    mod.bind(data_shapes=[mx.io.DataDesc(k, shapes[k], layout="N" if k == "data" else "C")
                          for k in names],
             label_shapes=[("softmax_label", (N,))], inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9})
    batches = []
    for i in range(3):
        rows = slice(N * i, N * (i + 1))
        batches.append(mx.io.DataBatch([mx.nd.array(a) for a in (x[rows], idx, pick_idx, nd_idx)],
                                       [mx.nd.array(y[rows])]))
    return train_steps(mx, mod, batches, grads=("fc1_weight", "fc2_weight"))
