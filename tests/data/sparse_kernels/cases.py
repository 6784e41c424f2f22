"""MXNet's optimizer kernels (`mx.nd.sparse.sgd_update` ...) on every storage-type mix of weight,
gradient and states (AdaGrad's sparse-only kernel and contrib.group_adagrad_update, whose
history has one value per row, on the mixes they take), written once for both
engines: `run(mx)` gives the weight and states after two calls, and the weight's storage type,
by case name (MXNet 1.9.1 under gen_sparse_kernels_golden.py, minimod under
tests/ndarray/test_sparse_kernels.py). The gradient stores rows 1 and 3 of 5 (a stored row of
zeros included), so a lazy update shows in the rows it leaves alone."""
import numpy as np

KERNELS = {  # name: (states, hyperparameters, takes lazy_update)
    "sgd_update": (0, dict(lr=0.1, wd=0.1, rescale_grad=0.5, clip_gradient=1.0), True),
    "sgd_mom_update": (1, dict(lr=0.1, wd=0.1, momentum=0.9), True),
    "adam_update": (2, dict(lr=0.1, wd=0.1, beta1=0.8, beta2=0.9, epsilon=1e-6), True),
    "ftrl_update": (2, dict(lr=0.1, wd=0.1, lamda1=0.01, beta=1.0), False),
    "adagrad_update": (1, dict(lr=0.1, epsilon=0.5, rescale_grad=0.5, clip_gradient=0.8),
                       False),
}
MIXES = [("default", "row_sparse", "default"), ("row_sparse", "row_sparse", "row_sparse"),
         ("row_sparse", "row_sparse", "default"), ("default", "default", "default")]


def _arrays(mx, w_st, g_st, s_st, states):
    rng = np.random.RandomState(3)
    w = rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    g = np.zeros((5, 3), np.float32)
    g[1] = rng.uniform(-2, 2, 3)
    grad = mx.nd.array(g).tostype(g_st)
    if g_st == "row_sparse":  # row 3 stored, all zeros: updated all the same
        grad = mx.nd.sparse.row_sparse_array((np.stack([g[1], g[3]]), [1, 3]), shape=(5, 3))
    return (mx.nd.array(w).tostype(w_st), grad,
            [mx.nd.array(rng.uniform(0.1, 1, (5, 3))).tostype(s_st) for _ in range(states)])


def run(mx):
    out = {}
    for name, (states, hyper, takes_lazy) in KERNELS.items():
        for w_st, g_st, s_st in MIXES if name != "adagrad_update" else MIXES[:2]:
            for lazy in ((True, False) if takes_lazy else (None,)):
                weight, grad, state = _arrays(mx, w_st, g_st, s_st, states)
                kw = dict(hyper) if lazy is None else dict(hyper, lazy_update=lazy)
                space = mx.nd.sparse if "row_sparse" in (w_st, g_st) else mx.nd
                for _ in range(2):
                    getattr(space, name)(weight, grad, *state, out=weight, **kw)
                key = "%s/%s-%s-%s/%s" % (name, w_st, g_st, s_st, lazy)
                out[key + "/weight"] = weight.asnumpy()
                out[key + "/stype"] = np.array(weight.stype)
                for i, s in enumerate(state):
                    out[key + "/state%d" % i] = s.asnumpy()
    out.update(_group_adagrad(mx))
    return out


def _group_adagrad(mx):
    out = {}
    for w_st, g_st, s_st in MIXES[:2]:
        weight, grad, _ = _arrays(mx, w_st, g_st, s_st, 0)
        history = mx.nd.array(np.linspace(0.1, 0.5, 5).reshape(5, 1)).tostype(s_st)
        for _ in range(2):
            mx.nd.contrib.group_adagrad_update(weight, grad, history, out=weight, lr=0.1,
                                               rescale_grad=0.5, clip_gradient=0.8,
                                               epsilon=0.01)
        key = "group_adagrad_update/%s-%s-%s/None" % (w_st, g_st, s_st)
        out[key + "/weight"] = weight.asnumpy()
        out[key + "/stype"] = np.array(weight.stype)
        out[key + "/state0"] = history.asnumpy()
    return out
