"""Special functions as array code (the forwards of gamma, gammaln, erf, erfinv, and digamma,
which their gradients need), written with `xp` ufuncs only so that NumPy and CuPy run the same
series.

The forwards, `*_into(xp, x, o)`, evaluate in float64 whatever the data's float type and write
into `o` (casting to its dtype): their series lose a few digits, which float64 absorbs, so a
float32 result is correctly rounded as MXNet's (C library) one is. `digamma` works in its
argument's dtype.
"""
from __future__ import annotations

import math

from .helpers import cast_into

__all__ = ["gamma_into", "gammaln_into", "erf_into", "erfinv_into", "digamma"]


def _lanczos_gammaln(xp, x):
    # ln Gamma(x) for x > 0 by the Lanczos approximation (g = 7, 9 terms; ~1e-15 relative),
    # reflected for x < 0.5: ln|Gamma(x)| = ln(pi / |sin(pi x)|) - ln Gamma(1 - x).
    reflect = x < 0.5
    z = xp.where(reflect, 1 - x, x) - 1
    acc = z * 0 + _LANCZOS[0]
    for k, c in enumerate(_LANCZOS[1:], start=1):
        acc = acc + c / (z + k)
    t = z + 7.5
    value = 0.5 * math.log(2 * math.pi) + (z + 0.5) * xp.log(t) - t + xp.log(acc)
    flipped = math.log(math.pi) - xp.log(xp.abs(xp.sin(math.pi * x))) - value
    pole = reflect & (x == xp.floor(x))  # 0, -1, -2 ...: sin(pi x) is only rounded to ~0
    return xp.where(pole, xp.inf, xp.where(reflect, flipped, value))


_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)


def digamma(xp, x):
    # psi(x): recurrence up to x >= 6, then the asymptotic series; reflection for x < 0.5.
    reflect = x < 0.5
    z = xp.where(reflect, 1 - x, x)
    shift = z * 0
    for _ in range(6):
        small = z < 6
        shift = shift - xp.where(small, 1 / z, 0)
        z = xp.where(small, z + 1, z)
    inv2 = 1 / (z * z)
    series = (xp.log(z) - 0.5 / z
              - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
                  1 / 240 - inv2 / 132)))))
    value = series + shift
    return xp.where(reflect, value - math.pi / xp.tan(math.pi * x), value)


def _gamma_sign(xp, x):
    # sign of Gamma(x): negative on (-2k-1, -2k) for x < 0
    return xp.where((x < 0) & (xp.floor(x) % 2 != 0), -1.0, 1.0)


def gammaln_into(xp, x, o):
    x = x.astype("float64")
    value = xp.where((x == 1) | (x == 2), 0.0, _lanczos_gammaln(xp, x))  # exact, as C's lgamma
    cast_into(xp, o, value)


def gamma_into(xp, x, o):
    x = x.astype("float64")
    value = _gamma_sign(xp, x) * xp.exp(_lanczos_gammaln(xp, x))
    # at the poles, C's tgamma (MXNet's): +-inf at +-0, NaN at the negative integers
    value = xp.where(x == 0, xp.copysign(xp.inf, x), value)
    value = xp.where((x < 0) & (x == xp.floor(x)), xp.nan, value)
    # and exact factorials at 1, 2, ... 171 (Lanczos is off by an ulp or two there, which a
    # truncation to an integer dtype would turn into (n-1)! - 1)
    facts = xp.concatenate((xp.ones(1), xp.cumprod(xp.arange(1, 171, dtype="float64"))))
    exact = (x >= 1) & (x <= 171) & (x == xp.floor(x))
    index = (xp.where(exact, x, 1.0) - 1).astype("int64")  # NaN would index out of range
    cast_into(xp, o, xp.where(exact, facts[index], value))


def _erf_values(xp, x):
    # Maclaurin series for |x| < 2.5 (60 terms reach double precision there, losing about two
    # digits to cancellation), Laplace's continued fraction for erfc beyond.
    ax = xp.abs(x)
    small = xp.minimum(ax, 2.5)  # the series' terms overflow far out, where it is not used
    term = small
    total = small * 1.0
    x2 = small * small
    for n in range(1, 60):
        term = term * (-x2) / n
        total = total + term / (2 * n + 1)
    series = total * (2 / math.sqrt(math.pi))
    big = xp.maximum(ax, 2.5)
    frac = xp.zeros_like(big)
    for k in range(60, 0, -1):
        frac = (k / 2) / (big + frac)
    erfc = xp.exp(-big * big) / math.sqrt(math.pi) / (big + frac)
    value = xp.where(ax < 2.5, series, 1 - erfc)
    return xp.where(x < 0, -value, value)


def erf_into(xp, x, o):
    cast_into(xp, o, _erf_values(xp, x.astype("float64")))


def erfinv_into(xp, x, o):
    # Winitzki's closed form (relative error about 2e-3) refined by Newton steps on the
    # float64 erf above: each step squares the error, so three reach double precision
    x = x.astype("float64")
    inner = xp.clip(x, -1 + 1e-16, 1 - 1e-16)  # the ends and beyond are set at the end
    a = 0.147
    ln = xp.log(1.0 - inner * inner)
    first = 2.0 / (math.pi * a) + ln / 2.0
    y = xp.sign(inner) * xp.sqrt(xp.sqrt(first * first - ln / a) - first)
    for _ in range(3):
        y = y - (_erf_values(xp, y) - inner) / ((2 / math.sqrt(math.pi)) * xp.exp(-y * y))
    y = xp.where(xp.abs(x) == 1, xp.copysign(xp.inf, x), y)
    cast_into(xp, o, xp.where(xp.abs(x) > 1, xp.nan, y))
