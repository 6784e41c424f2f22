"""Hand-written NumPy training steps of the benchmark's models: the floor a NumPy engine aims at.

Each class holds its parameters, momenta, activations and gradients in arrays allocated once,
and `step(x, y)` runs forward, backward and the SGD-momentum update (lr 0.01, momentum 0.9,
gradients scaled by 1/batch like Module's rescale_grad) with in-place ufuncs and BLAS calls
only: no graph, no framework, no checks. The layouts are whatever is fastest by hand (the
convolutions keep channels first, (C, N, H, W), so no transposes are needed between layers).

`profile_steps.py` times these beside minimod's Module steps; `--check` below trains each for
a few steps on a fixed batch and shows the loss going down (they are references for time, so
that is the sanity check they get).
"""
from __future__ import annotations

import numpy as np

LR, MOM = np.float32(0.01), np.float32(0.9)


class _Step:
    """`step(x, y)` returns the batch's mean cross-entropy while `want_loss` is set; timing
    runs clear it, since the Module and PyTorch peers they are compared with compute none."""

    want_loss = True


def _init(rng, shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


class _SGD:
    """Momentum SGD over a list of (weight, grad) pairs: four in-place passes per tensor."""

    def __init__(self, pairs):
        self.pairs = pairs
        self.moms = [np.zeros_like(w) for w, _ in pairs]

    def update(self):
        for (w, g), m in zip(self.pairs, self.moms):
            m *= MOM
            g *= LR
            m -= g
            w += m


class _FlatSGD:
    """Momentum SGD over parameters that live end to end in one flat buffer (and their
    gradients in another): the same four passes as _SGD, once over the whole buffer, which is
    what minimod's flat update does."""

    def __init__(self, weight, grad):
        self.weight, self.grad = weight, grad
        self.mom = np.zeros_like(weight)
        self.tmp = np.empty_like(weight)

    def update(self):
        np.multiply(self.grad, LR, out=self.tmp)
        self.mom *= MOM
        self.mom -= self.tmp
        self.weight += self.mom


def _flatten(arrays):
    """One flat buffer holding `arrays`' values, and a view of it shaped like each."""
    flat = np.empty(sum(a.size for a in arrays), np.float32)
    views, lo = [], 0
    for arr in arrays:
        view = flat[lo:lo + arr.size].reshape(arr.shape)
        view[...] = arr
        views.append(view)
        lo += arr.size
    return flat, views


def _softmax_xent_grad(z, y, rows, scale, red, want_loss=True):
    """z (N, K) logits -> z holds the gradient (softmax - onehot) * scale; returns the loss
    (None unless want_loss: the engines measured beside these steps compute no loss)."""
    np.max(z, axis=1, keepdims=True, out=red)
    z -= red
    np.exp(z, out=z)
    np.sum(z, axis=1, keepdims=True, out=red)
    z /= red
    loss = float(-np.log(np.maximum(z[rows, y], 1e-30)).mean()) if want_loss else None
    z[rows, y] -= 1
    z *= scale
    return loss


class MLP(_Step):
    """784-512-512-10 (or `dims`), ReLU, softmax cross-entropy."""

    def __init__(self, batch: int, seed: int = 0, dims=(784, 512, 512, 10),
                 flat: bool = False):
        rng = np.random.RandomState(seed)
        self.w = [_init(rng, (o, i), i) for i, o in zip(dims, dims[1:])]
        self.b = [np.zeros(o, np.float32) for o in dims[1:]]
        self.gw = [np.empty_like(w) for w in self.w]
        self.gb = [np.empty_like(b) for b in self.b]
        if flat:  # parameters and gradients in flat buffers, updated in one pass each
            weight, views = _flatten(self.w + self.b)
            grad, grads = _flatten(self.gw + self.gb)
            layers = len(self.w)
            self.w, self.b, self.gw, self.gb = (views[:layers], views[layers:],
                                                grads[:layers], grads[layers:])
            self.opt = _FlatSGD(weight, grad)
        else:
            self.opt = _SGD(list(zip(self.w, self.gw)) + list(zip(self.b, self.gb)))
        self.h = [np.empty((batch, o), np.float32) for o in dims[1:]]
        self.dh = [np.empty((batch, o), np.float32) for o in dims[1:3]]
        self.red = np.empty((batch, 1), np.float32)
        self.rows = np.arange(batch)
        self.scale = np.float32(1.0 / batch)

    def step(self, x, y):
        w, b, h, gw, gb, dh = self.w, self.b, self.h, self.gw, self.gb, self.dh
        np.dot(x, w[0].T, out=h[0])
        h[0] += b[0]
        np.maximum(h[0], 0, out=h[0])
        np.dot(h[0], w[1].T, out=h[1])
        h[1] += b[1]
        np.maximum(h[1], 0, out=h[1])
        np.dot(h[1], w[2].T, out=h[2])
        h[2] += b[2]
        loss = _softmax_xent_grad(h[2], y, self.rows, self.scale, self.red,
                                  self.want_loss)
        dz = h[2]
        for layer in (2, 1, 0):
            inp = x if layer == 0 else h[layer - 1]
            np.dot(dz.T, inp, out=gw[layer])
            np.sum(dz, axis=0, out=gb[layer])
            if layer:
                d = dh[layer - 1]
                np.dot(dz, w[layer], out=d)
                d *= np.sign(h[layer - 1])      # ReLU mask: h >= 0
                dz = d
        self.opt.update()
        return loss


class LeNet(_Step):
    """conv5x5x20 tanh maxpool2, conv5x5x50 tanh maxpool2, fc500 tanh, fc10; im2col + one GEMM
    per direction with activations kept batch innermost, (C, H, W, N): every im2col, col2im and
    pooling slice is then a run of contiguous W * N floats, the GEMM output is already in that
    layout, and the flatten before fc1 is a free reshape (the layout the performance anchors
    found fastest in NumPy). The fully connected layers work on transposed activations
    (features, N) for the same reason."""

    def __init__(self, batch: int, seed: int = 0):
        rng = np.random.RandomState(seed)
        n = self.n = batch
        self.k1 = _init(rng, (20, 25), 25)
        self.k2 = _init(rng, (50, 500), 500)
        self.f1 = _init(rng, (500, 800), 800)
        self.f2 = _init(rng, (10, 500), 500)
        self.bs = [np.zeros(c, np.float32) for c in (20, 50, 500, 10)]
        self.ws = [self.k1, self.k2, self.f1, self.f2]
        self.gws = [np.empty_like(w) for w in self.ws]
        self.gbs = [np.empty_like(b) for b in self.bs]

        def e(*shape, dtype=np.float32):
            return np.zeros(shape, dtype)

        self.xc = e(1, 28, 28, n)
        self.cols1, self.c1, self.p1 = e(25, 24 * 24 * n), e(20, 24, 24, n), e(20, 12, 12, n)
        self.cols2, self.c2, self.p2 = e(500, 8 * 8 * n), e(50, 8, 8, n), e(50, 4, 4, n)
        self.a3, self.z = e(500, n), e(n, 10)
        self.d3, self.dflat = e(500, n), e(800, n)
        self.dc2, self.dcols2 = e(50, 8, 8, n), e(500, 8 * 8 * n)
        self.dp1, self.dc1 = e(20, 12, 12, n), e(20, 24, 24, n)
        self.t1, self.t2, self.t3 = e(20, 24, 24, n), e(50, 8, 8, n), e(500, n)
        # pooling backward: which window taps hold the maximum (and which already took it)
        self.hit1, self.taken1 = e(20, 12, 12, n, dtype=bool), e(20, 12, 12, n, dtype=bool)
        self.hit2, self.taken2 = e(50, 4, 4, n, dtype=bool), e(50, 4, 4, n, dtype=bool)
        self.red = e(n, 1)
        self.rows = np.arange(n)
        self.scale = np.float32(1.0 / n)
        self.opt = _SGD(list(zip(self.ws, self.gws)) + list(zip(self.bs, self.gbs)))

    @staticmethod
    def _im2col(x, k, out):
        """x (C, H, W, N) -> out (C * k * k, Ho * Wo * N) in one strided copy."""
        c, h, w, n = x.shape
        ho, wo = h - k + 1, w - k + 1
        s = x.strides
        view = np.lib.stride_tricks.as_strided(x, (c, k, k, ho, wo, n),
                                               (s[0], s[1], s[2], s[1], s[2], s[3]))
        out.reshape(c, k, k, ho, wo, n)[...] = view

    @staticmethod
    def _col2im(cols, k, dx):
        """Adjoint of _im2col: dx (C, H, W, N) = the sum of the tap slices of cols."""
        c, h, w, n = dx.shape
        ho, wo = h - k + 1, w - k + 1
        dx.fill(0)
        taps = cols.reshape(c, k, k, ho, wo, n)
        for i in range(k):
            for j in range(k):
                dx[:, i:i + ho, j:j + wo] += taps[:, i, j]

    @staticmethod
    def _quads(x):
        """The four taps of every 2x2 window of x (C, H, W, N), as strided views."""
        c, h, w, n = x.shape
        v = x.reshape(c, h // 2, 2, w // 2, 2, n)
        return [v[:, :, a, :, b] for a in (0, 1) for b in (0, 1)]

    def _pool(self, x, out):
        """2x2 max pool of x (C, H, W, N) into out (C, H/2, W/2, N)."""
        quads = self._quads(x)
        np.maximum(quads[0], quads[1], out=out)
        np.maximum(out, quads[2], out=out)
        np.maximum(out, quads[3], out=out)

    def _unpool(self, dy, x, y, dx, hit, taken):
        """dx's 2x2 taps = dy at the first tap of each window that holds its maximum y (as
        MXNet routes ties), 0 elsewhere."""
        taken.fill(False)
        for q, dq in zip(self._quads(x), self._quads(dx)):
            np.equal(q, y, out=hit)
            np.greater(hit, taken, out=hit)              # hit and not taken before
            taken |= hit
            np.multiply(dy, hit, out=dq)

    def step(self, x, y):
        n = self.n
        self.xc[...] = x.reshape(n, 1, 28, 28).transpose(1, 2, 3, 0)
        self._im2col(self.xc, 5, self.cols1)
        c1 = self.c1.reshape(20, -1)
        np.dot(self.k1, self.cols1, out=c1)
        c1 += self.bs[0][:, None]
        np.tanh(c1, out=c1)
        self._pool(self.c1, self.p1)
        self._im2col(self.p1, 5, self.cols2)
        c2 = self.c2.reshape(50, -1)
        np.dot(self.k2, self.cols2, out=c2)
        c2 += self.bs[1][:, None]
        np.tanh(c2, out=c2)
        self._pool(self.c2, self.p2)
        flat = self.p2.reshape(800, n)                      # (features, N): no copy
        np.dot(self.f1, flat, out=self.a3)
        self.a3 += self.bs[2][:, None]
        np.tanh(self.a3, out=self.a3)
        np.dot(self.a3.T, self.f2.T, out=self.z)
        self.z += self.bs[3]
        loss = _softmax_xent_grad(self.z, y, self.rows, self.scale, self.red,
                                  self.want_loss)
        # backward
        np.dot(self.z.T, self.a3.T, out=self.gws[3])
        np.sum(self.z, axis=0, out=self.gbs[3])
        np.dot(self.f2.T, self.z.T, out=self.d3)
        np.multiply(self.a3, self.a3, out=self.t3)
        np.subtract(1, self.t3, out=self.t3)
        self.d3 *= self.t3
        np.dot(self.d3, flat.T, out=self.gws[2])
        np.sum(self.d3, axis=1, out=self.gbs[2])
        np.dot(self.f1.T, self.d3, out=self.dflat)
        self._unpool(self.dflat.reshape(50, 4, 4, n), self.c2, self.p2, self.dc2, self.hit2,
                     self.taken2)
        np.multiply(self.c2, self.c2, out=self.t2)
        np.subtract(1, self.t2, out=self.t2)
        self.dc2 *= self.t2
        dc2 = self.dc2.reshape(50, -1)
        np.dot(dc2, self.cols2.T, out=self.gws[1])
        np.sum(dc2, axis=1, out=self.gbs[1])
        np.dot(self.k2.T, dc2, out=self.dcols2)
        self._col2im(self.dcols2, 5, self.dp1)
        self._unpool(self.dp1, self.c1, self.p1, self.dc1, self.hit1, self.taken1)
        np.multiply(self.c1, self.c1, out=self.t1)
        np.subtract(1, self.t1, out=self.t1)
        self.dc1 *= self.t1
        dc1 = self.dc1.reshape(20, -1)
        np.dot(dc1, self.cols1.T, out=self.gws[0])
        np.sum(dc1, axis=1, out=self.gbs[0])
        self.opt.update()
        return loss


class LSTMLM(_Step):
    """Embedding 2000x200, one LSTM layer of 200 over 35 steps, decoder to 2000 (the fused
    RNN's arithmetic: one input GEMM for all steps, one recurrent GEMM per step)."""

    def __init__(self, batch: int, seq: int = 35, vocab: int = 2000, embed: int = 200,
                 hidden: int = 200, seed: int = 0):
        rng = np.random.RandomState(seed)
        n, t, e, h, v = batch, seq, embed, hidden, vocab
        self.dims = (n, t, e, h, v)
        u = lambda *s: rng.uniform(-0.1, 0.1, s).astype(np.float32)  # noqa: E731
        self.emb, self.wx, self.wh, self.bx = u(v, e), u(4 * h, e), u(4 * h, h), u(4 * h)
        self.wd, self.bd = u(v, h), u(v)
        self.ws = [self.emb, self.wx, self.wh, self.bx, self.wd, self.bd]
        self.gs = [np.empty_like(w) for w in self.ws]
        e_ = np.empty
        self.x = e_((t, n, e), np.float32)
        self.gates = e_((t, n, 4 * h), np.float32)
        self.c = e_((t, n, h), np.float32)
        self.tc = e_((t, n, h), np.float32)
        self.hs = e_((t, n, h), np.float32)
        self.z = e_((t * n, v), np.float32)
        self.dhs = e_((t, n, h), np.float32)
        self.dg = e_((t, n, 4 * h), np.float32)
        self.dx = e_((t * n, e), np.float32)
        self.rec = e_((n, 4 * h), np.float32)
        self.dh = e_((n, h), np.float32)
        self.dc = e_((n, h), np.float32)
        self.tmp = e_((n, h), np.float32)
        self.zero = np.zeros((n, h), np.float32)
        self.red = e_((t * n, 1), np.float32)
        self.rows = np.arange(t * n)
        self.scale = np.float32(1.0 / n)
        self.opt = _SGD(list(zip(self.ws, self.gs)))

    @staticmethod
    def _sigmoid(a):
        a *= 0.5
        np.tanh(a, out=a)
        a *= 0.5
        a += 0.5

    def step(self, tokens, labels):
        n, t, e, h, v = self.dims
        ids = tokens.T.astype(np.int64)                       # (T, N)
        np.take(self.emb, ids, axis=0, out=self.x)
        np.dot(self.x.reshape(t * n, e), self.wx.T, out=self.gates.reshape(t * n, 4 * h))
        self.gates += self.bx
        h_prev, c_prev = self.zero, self.zero
        for s in range(t):
            g = self.gates[s]
            np.dot(h_prev, self.wh.T, out=self.rec)
            g += self.rec
            self._sigmoid(g[:, :2 * h])
            np.tanh(g[:, 2 * h:3 * h], out=g[:, 2 * h:3 * h])
            self._sigmoid(g[:, 3 * h:])
            np.multiply(g[:, h:2 * h], c_prev, out=self.c[s])
            np.multiply(g[:, :h], g[:, 2 * h:3 * h], out=self.tmp)
            self.c[s] += self.tmp
            np.tanh(self.c[s], out=self.tc[s])
            np.multiply(g[:, 3 * h:], self.tc[s], out=self.hs[s])
            h_prev, c_prev = self.hs[s], self.c[s]
        hs2 = self.hs.reshape(t * n, h)
        np.dot(hs2, self.wd.T, out=self.z)
        self.z += self.bd
        loss = _softmax_xent_grad(self.z, labels.T.reshape(-1).astype(np.int64), self.rows,
                                  self.scale, self.red, self.want_loss)
        g_emb, g_wx, g_wh, g_bx, g_wd, g_bd = self.gs
        np.dot(self.z.T, hs2, out=g_wd)
        np.sum(self.z, axis=0, out=g_bd)
        np.dot(self.z, self.wd, out=self.dhs.reshape(t * n, h))
        dh, dc, tmp = self.dh, self.dc, self.tmp
        dh.fill(0)
        dc.fill(0)
        for s in range(t - 1, -1, -1):
            g = self.gates[s]
            i_g, f_g, c_g, o_g = g[:, :h], g[:, h:2 * h], g[:, 2 * h:3 * h], g[:, 3 * h:]
            dh += self.dhs[s]
            da = self.dg[s]
            np.multiply(self.tc[s], self.tc[s], out=tmp)
            np.subtract(1, tmp, out=tmp)
            tmp *= o_g
            tmp *= dh
            dc += tmp
            np.multiply(dh, self.tc[s], out=da[:, 3 * h:])
            da[:, 3 * h:] *= o_g * (1 - o_g)
            np.multiply(dc, c_g, out=da[:, :h])
            da[:, :h] *= i_g * (1 - i_g)
            np.multiply(dc, self.c[s - 1] if s else self.zero, out=da[:, h:2 * h])
            da[:, h:2 * h] *= f_g * (1 - f_g)
            np.multiply(dc, i_g, out=da[:, 2 * h:3 * h])
            da[:, 2 * h:3 * h] *= 1 - c_g * c_g
            dc *= f_g
            np.dot(da, self.wh, out=dh)
        dg2 = self.dg.reshape(t * n, 4 * h)
        np.dot(dg2.T, self.x.reshape(t * n, e), out=g_wx)
        np.dot(self.dg[1:].reshape(-1, 4 * h).T, self.hs[:-1].reshape(-1, h), out=g_wh)
        np.sum(dg2, axis=0, out=g_bx)
        np.dot(dg2, self.wx, out=self.dx)
        g_emb.fill(0)
        np.add.at(g_emb, ids.reshape(-1), self.dx)
        self.opt.update()
        return loss


MODELS = {"mlp": MLP, "lenet": LeNet, "lstm": LSTMLM}


def data(net: str, batch: int, seed: int = 0, dims=(784, 512, 512, 10)):
    rng = np.random.RandomState(seed)
    if net == "mlp":
        return (rng.uniform(-1, 1, (batch, dims[0])).astype(np.float32),
                rng.randint(0, dims[-1], batch))
    if net == "lenet":
        return (rng.uniform(-1, 1, (batch, 1, 28, 28)).astype(np.float32),
                rng.randint(0, 10, batch))
    return rng.randint(0, 2000, (batch, 35)), rng.randint(0, 2000, (batch, 35))


if __name__ == "__main__":
    for name, batch in (("mlp", 32), ("lenet", 16), ("lstm", 8)):
        model = MODELS[name](batch)
        x, y = data(name, batch)
        losses = [model.step(x, y) for _ in range(30)]
        print("%-6s loss %.3f -> %.3f" % (name, losses[0], losses[-1]))
        assert losses[-1] < losses[0], name
