"""`_contrib_hawkesll`: the log likelihood of K univariate Hawkes processes with exponential
kernels, observed as ragged batches of points.

For sample i and process k the conditional intensity is
``lda[i, k] + alpha[k] * beta[k] * s_k(t)``, where the memory
``s_k(t) = sum over earlier points m of process k of exp(-beta[k] * (t - t_m))`` starts at
``state[i, k]`` at t = 0. The points of sample i are its first ``valid_length[i]`` entries of
``lags`` (the times since the point before) and ``marks`` (their process). The result is

    loglik[i] = sum over points of log(intensity at the point)
                - sum over k of (lda[i, k] * T_i + alpha[k] * (state[i, k] + n_ik - s_k(T_i)))

with T_i = ``max_time[i]`` and n_ik the points of process k (each unit of memory, the
starting one included, has added ``alpha (1 - its value at T)`` to the integral of the
intensity), and ``out_state = s(T_i)``, the memory to start the next observation window with.

The forward sweeps the T steps once, all samples at a time. The backward sweeps them again,
carrying beside the memory its derivative in beta (`r`, the memory weighted by each unit's age)
and in the starting state (`q`, the decay since t = 0), and gives the gradients of both outputs
to `lda`, `alpha`, `beta` and `state`. MXNet 1.9.1 gives `state` a zero gradient and ignores the
head gradient of `out_state`; minimod gives both their values (docs/compatibility.md). Like
MXNet, it has no gradient for the observations (`lags`, `marks`, `valid_length`, `max_time`)
and says so when one is asked for.
"""
from __future__ import annotations

from ...base import MXNetError, ShapeError
from ..registry import Op, fmt_shape, register


def _sweep(xp, lda, alpha, beta, state, lags, marks, valid, max_time):
    """Run the points once; every quantity the outputs and their gradients are made of."""
    f64 = "float64"
    n, steps = lags.shape
    lda, alpha, beta = lda.astype(f64), alpha.astype(f64), beta.astype(f64)
    s = state.astype(f64)
    r, q = xp.zeros_like(s), xp.ones_like(s)
    counts = xp.zeros_like(s)
    sums = {k: xp.zeros_like(s) for k in ("lda", "alpha", "beta", "state")}
    loglik = xp.zeros(n, dtype=f64)
    elapsed = xp.zeros(n, dtype=f64)
    rows = xp.arange(n)
    for j in range(steps):
        active = valid > j
        lag = xp.where(active, lags[:, j].astype(f64), 0.0)
        decay = xp.exp(-beta[None, :] * lag[:, None])
        r = (r + lag[:, None] * s) * decay
        s, q = s * decay, q * decay
        k = xp.where(active, marks[:, j].astype("int64"), 0)
        sk, a, b = s[rows, k], alpha[k], beta[k]
        intensity = lda[rows, k] + a * b * sk
        loglik += xp.where(active, xp.log(xp.where(active, intensity, 1.0)), 0.0)
        w = xp.where(active, 1.0 / intensity, 0.0)
        for name, value in (("lda", w), ("alpha", w * b * sk),
                            ("beta", w * a * (sk - b * r[rows, k])),
                            ("state", w * a * b * q[rows, k])):
            sums[name][rows, k] += value
        s[rows, k] += active
        counts[rows, k] += active
        elapsed += lag
    rest = max_time.astype(f64) - elapsed
    decay = xp.exp(-beta[None, :] * rest[:, None])
    r = (r + rest[:, None] * s) * decay
    s, q = s * decay, q * decay
    spent = state.astype(f64) + counts - s  # each memory unit's share of the integral, / alpha
    loglik -= (lda * max_time.astype(f64)[:, None] + alpha[None, :] * spent).sum(axis=1)
    return dict(loglik=loglik, out_state=s, r=r, q=q, spent=spent, sums=sums, alpha=alpha)


@register
class HawkesLL(Op):
    """Log likelihood of Hawkes processes (see the module docstring): outputs `output` (N,)
    and `out_state` (N, K)."""

    name = "_contrib_hawkesll"
    ARGUMENTS = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")
    OUTPUTS = ("output", "out_state")
    backward_outputs = ()

    def infer_shape(self, in_shapes, out_shapes):
        lda, lags = in_shapes[0], in_shapes[4]
        for slot in (0, 3):
            if lda is None:
                lda = in_shapes[slot]
        if lda is not None and len(lda) != 2:
            raise ShapeError("%s: input 'lda' has shape %s but must be (N, K)"
                             % (self.name, fmt_shape(lda)))
        if lda is not None:
            n, k = lda
            for slot, want in ((0, (n, k)), (1, (k,)), (2, (k,)), (3, (n, k)), (6, (n,)),
                               (7, (n,))):
                self.set_in(in_shapes, slot, want, "lda %s" % fmt_shape(lda))
            self.set_out(out_shapes, 0, (n,))
            self.set_out(out_shapes, 1, (n, k))
        if lags is not None:
            if len(lags) != 2:
                raise ShapeError("%s: input 'lags' has shape %s but must be (N, T)"
                                 % (self.name, fmt_shape(lags)))
            self.set_in(in_shapes, 5, lags, "lags %s" % fmt_shape(lags))
        marks = in_shapes[5]
        if marks is not None:
            self.set_in(in_shapes, 4, marks, "marks %s" % fmt_shape(marks))
        return in_shapes, out_shapes

    def infer_type(self, in_types, out_types):
        known = next((t for t in list(in_types[:5]) + list(out_types) if t is not None), None)
        if known is None:
            return in_types, out_types
        types = [known] * 5 + [in_types[5], in_types[6] or known, in_types[7] or known]
        return types, [known, known]

    def forward(self, xp, inputs, aux, out, is_train):
        swept = _sweep(xp, *inputs)
        out[0][...] = swept["loglik"]
        out[1][...] = swept["out_state"]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        asked = [self.arguments()[i] for i in range(4, 8) if in_grads[i] is not None]
        if asked:
            raise MXNetError("%s has no gradient for the observations: '%s' needs "
                             "grad_req 'null'" % (self.name, asked[0]))
        swept = _sweep(xp, *inputs)
        g_ll = out_grads[0].astype("float64")[:, None]
        g_state = out_grads[1].astype("float64")
        sums, alpha = swept["sums"], swept["alpha"][None, :]
        grads = {
            0: g_ll * (sums["lda"] - inputs[7].astype("float64")[:, None]),
            1: (g_ll * (sums["alpha"] - swept["spent"])).sum(axis=0),
            2: (g_ll * (sums["beta"] - alpha * swept["r"]) - swept["r"] * g_state).sum(axis=0),
            3: g_ll * (sums["state"] - alpha * (1.0 - swept["q"])) + swept["q"] * g_state,
        }
        for slot, value in grads.items():
            if in_grads[slot] is not None:
                in_grads[slot][...] = value
