"""Imperative gradient scenarios, written once for both engines.

Each scenario takes the framework module (`mxnet` or `minimod`) and a dict of NumPy inputs and
returns a dict of NumPy results: outputs, the variables' gradients, and whatever state the
scenario checks. gen_autograd_golden.py runs them under MXNet 1.9.1 and saves the results;
tests/test_autograd.py runs them under minimod and compares.
"""
import numpy as np


def _rs(seed):
    return np.random.RandomState(seed)


INPUTS = {
    "dense": dict(x=_rs(1).randn(4, 6), w=_rs(2).randn(5, 6), b=_rs(3).randn(5)),
    "index": dict(x=_rs(4).randn(5, 4, 3)),
    "batchnorm": dict(x=_rs(5).randn(4, 3, 2, 2), gamma=_rs(6).rand(3) + 0.5,
                      beta=_rs(7).randn(3), og=_rs(8).randn(4, 3, 2, 2)),
    "loss": dict(z=_rs(9).randn(6, 5), label=np.array([0, 4, 2, 2, 1, 3], dtype=np.float64)),
    "shapes": dict(x=_rs(10).randn(2, 3, 4), y=_rs(11).randn(2, 3, 4)),
    "accumulate": dict(x=_rs(12).randn(3, 3)),
    "sorting": dict(x=_rs(13).permutation(24).reshape(4, 6).astype(np.float64)),
    "conv": dict(x=_rs(14).randn(2, 3, 6, 6), w=_rs(15).randn(4, 3, 3, 3), b=_rs(16).randn(4)),
    "rnn": dict(x=_rs(17).randn(5, 2, 3) * 0.5, params=_rs(18).randn(4 * 4 * (3 + 4) + 8 * 4)
                * 0.3, h0=_rs(19).randn(1, 2, 4) * 0.1, c0=_rs(20).randn(1, 2, 4) * 0.1),
    "embed": dict(idx=np.array([[1, 3, 3], [0, 2, 1]], dtype=np.float64),
                  table=_rs(21).randn(4, 6), gamma=_rs(22).rand(6) + 0.5, beta=_rs(23).randn(6)),
    "function": dict(x=_rs(24).randn(3, 4)),
}


def _arrays(mx, inputs, dtype="float32", grads=()):
    out = {k: mx.nd.array(v, dtype=dtype) for k, v in inputs.items()}
    for k in grads:
        out[k].attach_grad()
    return out


def dense(mx, inputs):
    a = _arrays(mx, inputs, grads=("x", "w", "b"))
    with mx.autograd.record():
        z = mx.nd.FullyConnected(a["x"], a["w"], a["b"], num_hidden=5)
        y = (mx.nd.relu(z) ** 2).mean() + a["x"].abs().sum() * 0.1 - mx.nd.tanh(z).sum(axis=0)
    y.backward()
    return dict(y=y.asnumpy(), gx=a["x"].grad.asnumpy(), gw=a["w"].grad.asnumpy(),
                gb=a["b"].grad.asnumpy())


def index(mx, inputs):
    a = _arrays(mx, inputs, grads=("x",))
    x = a["x"]
    with mx.autograd.record():
        p = x[1:4, ::2] * 3
        q = x[[0, 2, 2, 4]]
        r = x[1, :, 2]
        s = x[:, 1]
        y = p.sum() + (q * q).sum() + (r * 5).sum() + mx.nd.sigmoid(s).sum()
    y.backward()
    return dict(y=y.asnumpy(), gx=x.grad.asnumpy())


def batchnorm(mx, inputs):
    a = _arrays(mx, inputs, grads=("x", "gamma", "beta"))
    mean, var = mx.nd.zeros((3,)), mx.nd.ones((3,))
    with mx.autograd.record():
        y = mx.nd.BatchNorm(a["x"], a["gamma"], a["beta"], mean, var, fix_gamma=False,
                            momentum=0.8, eps=1e-3)
    y.backward(a["og"])
    infer = mx.nd.BatchNorm(a["x"], a["gamma"], a["beta"], mean, var, fix_gamma=False, eps=1e-3)
    return dict(y=y.asnumpy(), gx=a["x"].grad.asnumpy(), ggamma=a["gamma"].grad.asnumpy(),
                gbeta=a["beta"].grad.asnumpy(), mean=mean.asnumpy(), var=var.asnumpy(),
                infer=infer.asnumpy())


def loss(mx, inputs):
    a = _arrays(mx, inputs, grads=("z",))
    with mx.autograd.record():
        nll = -mx.nd.pick(mx.nd.log_softmax(a["z"]), a["label"]).mean()
    nll.backward()
    g_nll = a["z"].grad.asnumpy()
    with mx.autograd.record():
        out = mx.nd.SoftmaxOutput(a["z"], a["label"], grad_scale=0.5)
    out.backward()
    return dict(nll=nll.asnumpy(), g_nll=g_nll, out=out.asnumpy(), g_out=a["z"].grad.asnumpy())


def shapes(mx, inputs):
    a = _arrays(mx, inputs, grads=("x", "y"))
    x, y = a["x"], a["y"]
    with mx.autograd.record():
        c = mx.nd.concat(x, y * 2, dim=1)
        t = c.reshape((2, 6, 2, 2)).transpose((0, 2, 1, 3))
        parts = mx.nd.split(t, num_outputs=2, axis=1)
        e = mx.nd.expand_dims(parts[1], axis=0).sum(axis=(0, 2))
        st = mx.nd.stack(x, y, axis=1)
        out = (e * e).sum() + mx.nd.dot(x.reshape((6, 4)), y.reshape((6, 4)).T).sum() \
            + (st.flatten() ** 3).sum() + mx.nd.broadcast_to(x.sum(axis=2, keepdims=True),
                                                              (2, 3, 4)).max()
    out.backward()
    return dict(out=out.asnumpy(), gx=x.grad.asnumpy(), gy=y.grad.asnumpy())


def accumulate(mx, inputs):
    a = _arrays(mx, inputs)
    x = a["x"]
    x.attach_grad(grad_req="add")
    with mx.autograd.record():
        y = mx.nd.exp(x) * x
    y.backward(retain_graph=True)
    once = x.grad.asnumpy()
    y.backward()
    with mx.autograd.record():
        z = (x * x).sum()
    g = mx.autograd.grad(z, [x])[0]
    return dict(once=once, twice=x.grad.asnumpy(), g=g.asnumpy())


def sorting(mx, inputs):
    a = _arrays(mx, inputs, grads=("x",))
    x = a["x"]
    ograd = mx.nd.array(np.arange(12).reshape(4, 3), dtype="float32")
    with mx.autograd.record():
        v = mx.nd.topk(x, axis=1, k=3, ret_typ="value")
    v.backward(ograd)
    g_topk = x.grad.asnumpy()
    with mx.autograd.record():
        s = mx.nd.sort(x, axis=0, is_ascend=False)
        m = mx.nd.max(x, axis=1)
        y = (s[0] * 2).sum() + m.sum()
    y.backward()
    return dict(v=v.asnumpy(), g_topk=g_topk, g_sort=x.grad.asnumpy())


def conv(mx, inputs):
    a = _arrays(mx, inputs, grads=("x", "w", "b"))
    with mx.autograd.record():
        c = mx.nd.Convolution(a["x"], a["w"], a["b"], kernel=(3, 3), num_filter=4, pad=(1, 1))
        p = mx.nd.Pooling(mx.nd.Activation(c, act_type="tanh"), kernel=(2, 2), stride=(2, 2),
                          pool_type="max")
        y = (p * p).sum()
    y.backward()
    return dict(y=y.asnumpy(), gx=a["x"].grad.asnumpy(), gw=a["w"].grad.asnumpy(),
                gb=a["b"].grad.asnumpy())


def rnn(mx, inputs):
    a = _arrays(mx, inputs, grads=("x", "params", "h0", "c0"))
    with mx.autograd.record():
        out, h, c = mx.nd.RNN(data=a["x"], parameters=a["params"], state=a["h0"],
                              state_cell=a["c0"], state_size=4,
                              num_layers=1, mode="lstm", state_outputs=True)
        y = (out * out).sum() + h.sum() * 2 + (c * c).sum()
    y.backward()
    return dict(out=out.asnumpy(), gx=a["x"].grad.asnumpy(), gp=a["params"].grad.asnumpy(),
                gh=a["h0"].grad.asnumpy(), gc=a["c0"].grad.asnumpy())


def embed(mx, inputs):
    a = _arrays(mx, inputs, grads=("table", "gamma", "beta"))
    with mx.autograd.record():
        e = mx.nd.Embedding(a["idx"], a["table"], input_dim=4, output_dim=6)
        n = mx.nd.LayerNorm(e, a["gamma"], a["beta"], axis=-1)
        y = (mx.nd.softmax(n, axis=-1) * mx.nd.arange(6)).sum()
    y.backward()
    return dict(y=y.asnumpy(), gt=a["table"].grad.asnumpy(), gg=a["gamma"].grad.asnumpy(),
                gb=a["beta"].grad.asnumpy())


def function(mx, inputs):
    class Softsign(mx.autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x / (1 + x.abs())

        def backward(self, dy):
            x, = self.saved_tensors
            return dy / ((1 + x.abs()) ** 2)

    a = _arrays(mx, inputs, grads=("x",))
    with mx.autograd.record():
        y = (Softsign()(a["x"] * 2) ** 2).sum()
    y.backward()
    return dict(y=y.asnumpy(), gx=a["x"].grad.asnumpy())


SCENARIOS = dict(dense=dense, index=index, batchnorm=batchnorm, loss=loss, shapes=shapes,
                 accumulate=accumulate, sorting=sorting, conv=conv, rnn=rnn, embed=embed,
                 function=function)
