"""Module training with a CSR data input and row_sparse weights, written once for both
engines: `run(mx, name)` trains case `name` with the module `mx` (MXNet 1.9.1 under
gen_sparse_module_golden.py, minimod under tests/module/test_sparse_dot.py) and returns the
final parameters and the storage type Module gave each. Every case starts from fixed
parameters and feeds fixed CSR batches, so both engines see the same numbers."""
import numpy as np

FEATURES, BATCH, STEPS = 12, 4, 3


def _batches():
    rng = np.random.RandomState(5)
    out = []
    for _ in range(STEPS):
        dense = rng.uniform(0.5, 1.5, (BATCH, FEATURES)).astype(np.float32)
        dense *= rng.uniform(size=dense.shape) < 0.2  # about 20% of the entries stored
        out.append((dense, rng.uniform(-1, 1, (BATCH, 2)).astype(np.float32)))
    return out


def _linear(mx, x, w, extra):
    dot = mx.sym.sparse.dot(x, w)
    if extra == "sum":  # w read by a second, dense operator: a dense gradient in MXNet
        return mx.sym.broadcast_add(dot, mx.sym.sum(w))
    if extra == "square_sum":  # MXNet: a row-sparse gradient holding every row
        return mx.sym.broadcast_add(dot, mx.sym.sum(
            mx.sym._internal._square_sum(w, axis=1, keepdims=True)))
    if extra == "two_dots":
        return dot + mx.sym.dot(x, w)
    return dot


def _fm(mx, x, w):
    """A small factorization machine, the model MXNet's sparse tutorials train."""
    v = mx.sym.var("v", shape=(FEATURES, 2), stype="row_sparse")
    bias = mx.sym.var("bias", shape=1)
    linear = mx.sym.broadcast_add(mx.sym.dot(x, w), bias)
    v_s = mx.sym._internal._square_sum(data=v, axis=1, keepdims=True)
    pair = 0.5 * mx.sym.square(mx.sym.dot(x, v))
    both = mx.sym.sum(mx.sym.Concat(linear, pair, dim=1), axis=1, keepdims=True)
    return mx.sym.elemwise_add(both, -0.5 * mx.sym.dot(mx.sym.square(x), v_s))


CASES = {
    "sgd_momentum_wd": ("plain", ("sgd", dict(momentum=0.9, wd=0.1))),
    "sgd_plain": ("plain", ("sgd", {})),
    "sgd_not_lazy": ("plain", ("sgd", dict(momentum=0.9, wd=0.1, lazy_update=False))),
    "adam": ("plain", ("adam", dict(wd=0.01))),
    "also_dense_reader": ("sum", ("sgd", dict(momentum=0.9, wd=0.1))),
    "square_sum_reader": ("square_sum", ("sgd", dict(momentum=0.9, wd=0.1))),
    "two_dots": ("two_dots", ("sgd", dict(momentum=0.9, wd=0.1))),
    "fm": ("fm", ("sgd", dict(momentum=0.1, wd=0.05, clip_gradient=5.0,
                              rescale_grad=1.0 / BATCH))),
}


def run(mx, name, context=None):
    model, (opt_name, opt_args) = CASES[name]
    x = mx.sym.var("data", stype="csr")
    w = mx.sym.var("w", shape=(FEATURES, 2 if model != "fm" else 1), stype="row_sparse")
    out = _fm(mx, x, w) if model == "fm" else _linear(mx, x, w, model)
    out = mx.sym.LinearRegressionOutput(out, mx.sym.var("label"))
    mod = mx.mod.Module(out, data_names=["data"], label_names=["label"],
                        context=context or mx.cpu())
    label_dim = 1 if model == "fm" else 2
    mod.bind(data_shapes=[("data", (BATCH, FEATURES))],
             label_shapes=[("label", (BATCH, label_dim))])
    rng = np.random.RandomState(11)
    shapes = dict(zip(out.list_arguments(), out.infer_shape(
        data=(BATCH, FEATURES), label=(BATCH, label_dim))[0]))
    start = {k: mx.nd.array(rng.uniform(-1, 1, shapes[k])) for k in mod._param_names}
    mod.init_params(arg_params=start)
    mod.init_optimizer(optimizer=opt_name, optimizer_params=dict(opt_args, learning_rate=0.1))
    for dense, label in _batches():
        data = mx.nd.array(dense).tostype("csr")
        mod.forward_backward(mx.io.DataBatch([data], [mx.nd.array(label[:, :label_dim])]))
        mod.update()
    params = mod.get_params()[0]
    result = {"%s/%s" % (name, k): v.asnumpy() for k, v in params.items()}
    result.update({"%s/%s/stype" % (name, k): np.array(v.stype) for k, v in params.items()})
    return result
