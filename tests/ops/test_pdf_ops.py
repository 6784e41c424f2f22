"""The random_pdf_* operators: MXNet 1.9.1's densities, log-densities and gradients
(tests/data/ops/pdf_golden.npz, written by gen_pdf_golden.py), finite-difference gradients
on each backend, and the shape contract."""
import json
import math
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import ShapeError

from .harness import Case, check_case

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "ops",
                              "pdf_golden.npz"))


@pytest.mark.parametrize("name", sorted({k.split("/")[0] for k in GOLDEN.files}))
def test_mxnets_numbers(name):
    meta = json.loads(str(GOLDEN[name + "/meta"]))
    names = meta["names"]
    inputs = [GOLDEN["%s/in%d" % (name, i)] for i in range(len(names))]
    net = getattr(mx.sym, meta["op"])(*[mx.sym.Variable(n) for n in names], **meta["attrs"])
    exe = net.simple_bind(mx.cpu(), **{n: a.shape for n, a in zip(names, inputs)})
    for n, a in zip(names, inputs):
        exe.arg_dict[n][:] = a
    out = exe.forward(is_train=True)[0]
    exe.backward([mx.nd.array(GOLDEN[name + "/head"])])
    np.testing.assert_allclose(out.asnumpy(), GOLDEN[name + "/out"], rtol=1e-5, atol=1e-7)
    for i, n in enumerate(names):
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), GOLDEN["%s/grad%d" % (name, i)],
                                   rtol=1e-4, atol=1e-6)


def _normal_ref(is_log):
    def ref(x, mu, sigma):
        z = (x - mu[:, None]) / sigma[:, None]
        logp = -z * z / 2 - np.log(sigma[:, None]) - math.log(2 * math.pi) / 2
        return [logp if is_log else np.exp(logp)]
    return ref


def _gamma_ref(x, alpha, beta):
    a, b = alpha[:, None], beta[:, None]
    lg = np.vectorize(math.lgamma)
    return [np.exp(a * np.log(b) + (a - 1) * np.log(x) - b * x - lg(a))]


@pytest.mark.parametrize("is_log", [False, True])
def test_normal_density_and_gradients(is_log, ctx):
    rng = np.random.RandomState(2)
    check_case(Case("random_pdf_normal", {"is_log": is_log},
                    [rng.randn(2, 4), rng.randn(2), rng.uniform(0.5, 2, 2)],
                    _normal_ref(is_log), id="pdf_normal"), ctx)


def test_gamma_density_and_gradients(ctx):
    """beta is a rate in MXNet's density (its gamma sampler's beta is a scale)."""
    rng = np.random.RandomState(3)
    check_case(Case("random_pdf_gamma", {}, [rng.uniform(0.3, 3, (2, 3)),
                                             rng.uniform(0.8, 3, 2), rng.uniform(0.5, 2, 2)],
                    _gamma_ref, id="pdf_gamma"), ctx)


def test_dirichlet_shapes_and_errors():
    net = mx.sym.random_pdf_dirichlet(mx.sym.Variable("sample"), mx.sym.Variable("alpha"))
    assert net.infer_shape(sample=(2, 5, 3), alpha=(2, 3))[1] == [(2, 5)]
    with pytest.raises(ShapeError, match="P \\+ S \\+ \\(K,\\)"):
        net.infer_shape(sample=(2, 5, 4), alpha=(2, 3))
    normal = mx.sym.random_pdf_normal(mx.sym.Variable("sample"), mx.sym.Variable("mu"),
                                      mx.sym.Variable("sigma"))
    with pytest.raises(ShapeError, match="'sigma' has shape \\(3,\\)"):
        normal.infer_shape(sample=(2, 4), mu=(2,), sigma=(3,))
