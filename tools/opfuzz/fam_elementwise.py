"""Op cases for opfuzz:
Every unary maths op and the scalar ops, float32 and float64, on their domains.

`gen(seed, n)` gives up to n case dicts (see run.py for their keys)."""

import random

UNARY = [
    "abs",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctanh",
    "cbrt",
    "ceil",
    "cos",
    "cosh",
    "degrees",
    "erf",
    "erfinv",
    "exp",
    "expm1",
    "fix",
    "floor",
    "gamma",
    "gammaln",
    "log",
    "log10",
    "log1p",
    "log2",
    "logical_not",
    "negative",
    "radians",
    "rcbrt",
    "reciprocal",
    "relu",
    "rint",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "softsign",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "trunc",
    "hard_sigmoid",
    "log_sigmoid",
    "mish",
    "ones_like",
    "zeros_like",
    "BlockGrad",
    "identity",
    "make_loss",
    "stop_gradient",
    "argmax_channel",
    "shape_array",
    "size_array",
]
DOMAIN = {
    "arccos": "half",
    "arcsin": "half",
    "arctanh": "half",
    "erfinv": "half",
    "arccosh": "gt1",
    "log": "pos",
    "log10": "pos",
    "log2": "pos",
    "log1p": "pos",
    "sqrt": "pos",
    "rsqrt": "pos",
    "gamma": "pos",
    "gammaln": "pos",
    "reciprocal": "pos",
    "rcbrt": "pos",
    "cbrt": "pos",
}
SCALAR = [
    "_plus_scalar",
    "_minus_scalar",
    "_rminus_scalar",
    "_mul_scalar",
    "_div_scalar",
    "_rdiv_scalar",
    "_power_scalar",
    "_rpower_scalar",
    "_maximum_scalar",
    "_minimum_scalar",
    "_hypot_scalar",
    "_mod_scalar",
    "_rmod_scalar",
    "_equal_scalar",
    "_greater_scalar",
    "_lesser_equal_scalar",
]


def gen(seed, n):
    R = random.Random(seed)
    cases = []
    for _ in range(n):
        shape = (R.randint(1, 3), R.randint(1, 4), R.randint(1, 5))
        dt = R.choice(["float32", "float64"])
        if R.random() < 0.6:
            op = R.choice(UNARY)
            cases.append(
                dict(
                    op=op,
                    params={},
                    shapes={"data": shape},
                    dtype=dt,
                    domain=DOMAIN.get(op),
                    no_grad=op in ("shape_array", "size_array", "argmax_channel"),
                )
            )
        else:
            op = R.choice(SCALAR)
            cases.append(
                dict(
                    op=op,
                    params={"scalar": R.choice([0.5, 2.0, -1.5, 3.0])},
                    shapes={"data": shape},
                    dtype=dt,
                    domain="pos" if "power" in op or "mod" in op else None,
                )
            )
    return cases
