"""The pre-Module training loop of MXNet's model.py, written out by hand: a
DataParallelExecutorManager over three devices with an uneven work_load_list, parameters set
from det_params, a 'local' kvstore with the optimizer on it (model._initialize_kvstore,
model._update_params_on_kvstore), three SGD-momentum steps with the metric updated per step,
and copy_to; then the same with sym_gen over two bucket keys (the second bucket's executors
bound on the first's parameters, its larger input buffers allocated anew)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import conv_bn, data, det_params, to_nd  # noqa: E402

SIZE = 8


def _batch(mx, x, y, i, bucket_key=None):
    rows = slice(i * SIZE, (i + 1) * SIZE)
    batch = mx.io.DataBatch([mx.nd.array(x[rows])], [mx.nd.array(y[rows])],
                            bucket_key=bucket_key,
                            provide_data=[mx.io.DataDesc("data", (SIZE,) + x.shape[1:])],
                            provide_label=[mx.io.DataDesc("softmax_label", (SIZE,))])
    return batch


def _train(mx, manager, sym, args, auxs, batches, prefix):
    out = {}
    arg_params, aux_params = to_nd(mx, args), to_nd(mx, auxs)
    manager.set_params(arg_params, aux_params)
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.001,
                                      rescale_grad=1.0 / SIZE))
    mx.model._initialize_kvstore(kvstore=kv, param_arrays=manager.param_arrays,
                                 arg_params=arg_params, param_names=manager.param_names,
                                 update_on_kvstore=True)
    metric = mx.metric.create(["acc", "ce"])
    for i, batch in enumerate(batches):
        manager.load_data_batch(batch)
        manager.forward(is_train=True)
        manager.backward()
        mx.model._update_params_on_kvstore(manager.param_arrays, manager.grad_arrays, kv,
                                           manager.param_names)
        manager.update_metric(metric, batch.label)
        out["%smetric%d" % (prefix, i)] = [v for _, v in metric.get_name_value()]
        out["%sout%d" % (prefix, i)] = np.concatenate(
            [e.outputs[0].asnumpy() for e in manager.curr_execgrp.train_execs])
    manager.copy_to(arg_params, aux_params)
    for name in sorted(arg_params):
        out["%sp_%s" % (prefix, name)] = arg_params[name].asnumpy()
    for name in sorted(aux_params):
        out["%saux_%s" % (prefix, name)] = aux_params[name].asnumpy()
    return out


def _bucket_sym(mx, length):
    data = mx.sym.Variable("data")  # (N, length, 3)
    hidden = mx.sym.FullyConnected(data, num_hidden=6, flatten=False, name="fc1")
    pooled = mx.sym.mean(mx.sym.tanh(hidden), axis=1)
    out = mx.sym.FullyConnected(pooled, num_hidden=4, name="fc2")
    return mx.sym.SoftmaxOutput(out, name="softmax")


def run(mx):
    ctx = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    x, y = data(3 * SIZE, (2, 6, 6), 5, seed=13)
    sym = conv_bn(mx)
    args, auxs = det_params(sym, data=(SIZE, 2, 6, 6), softmax_label=(SIZE,))
    train = mx.io.NDArrayIter(x, y, batch_size=SIZE)
    arg_names = sym.list_arguments()
    params = [n for n in arg_names if n not in ("data", "softmax_label")]
    manager = mx.executor_manager.DataParallelExecutorManager(
        sym, ctx, train, arg_names, params, sym.list_auxiliary_states(),
        work_load_list=[1, 2, 1])
    out = _train(mx, manager, sym, args, auxs, [_batch(mx, x, y, i) for i in range(3)], "")
    out["slices"] = [[s.start, s.stop] for s in manager.slices]

    rng = np.random.RandomState(8)
    seqs = {5: rng.uniform(-1, 1, (3 * SIZE, 5, 3)).astype(np.float32),
            3: rng.uniform(-1, 1, (3 * SIZE, 3, 3)).astype(np.float32)}
    labels = rng.randint(0, 4, size=(3 * SIZE,)).astype(np.float32)
    # the default bucket is the shorter one: MXNet 1.9.1 cannot bind a bucket smaller than
    # the default (its reshape of the shared input buffer refuses a smaller size)
    default = _bucket_sym(mx, 3)
    bucket_args, _ = det_params(default, data=(SIZE, 3, 3), softmax_label=(SIZE,))
    bucket_train = mx.io.NDArrayIter(seqs[3], labels, batch_size=SIZE)
    bucket_train.default_bucket_key = 3
    arg_names = default.list_arguments()
    manager = mx.executor_manager.DataParallelExecutorManager(
        default, ctx[:2], bucket_train, arg_names,
        [n for n in arg_names if n not in ("data", "softmax_label")], [],
        sym_gen=lambda key: _bucket_sym(mx, key))
    batches = [_batch(mx, seqs[key], labels, i, bucket_key=key)
               for i, key in enumerate([3, 5, 3])]
    out.update(_train(mx, manager, default, bucket_args, {}, batches, "bucket_"))
    out["buckets"] = sorted(manager.execgrp_bucket)
    return out
