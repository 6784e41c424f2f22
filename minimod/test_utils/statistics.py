"""Statistical checks of random generators (MXNet's `test_utils` names): the sample mean and
variance against their expected ranges, and the chi-square test of a generator's samples
against bucket probabilities, repeated by `verify_generator`.

The chi-square p-value is the upper tail of the chi-square distribution with (buckets - 1)
degrees of freedom, Q(k/2, x/2), computed here from the regularized incomplete gamma function
(series below a + 1, continued fraction above), so SciPy is not needed.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["gen_buckets_probs_with_ppf", "mean_check", "var_check", "chi_square_check",
           "verify_generator"]


def gen_buckets_probs_with_ppf(ppf, nbuckets: int) -> tuple:
    """`nbuckets` buckets of equal probability between the quantiles `ppf(i / nbuckets)`, and
    their probabilities."""
    if nbuckets <= 0:
        raise ValueError("gen_buckets_probs_with_ppf: nbuckets must be positive")
    edges = [ppf(i / float(nbuckets)) for i in range(nbuckets + 1)]
    return list(zip(edges[:-1], edges[1:])), [1.0 / nbuckets] * nbuckets


def mean_check(generator, mu: float, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the mean of generator(nsamples) lies within mu +- 3 sigma / sqrt(n)."""
    mean = np.asarray(generator(nsamples)).mean()
    spread = 3 * sigma / math.sqrt(nsamples)
    return bool(mu - spread < mean < mu + spread)


def var_check(generator, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the sample variance lies within sigma^2 +- 3 sqrt(2 sigma^4 / (n - 1))."""
    var = np.asarray(generator(nsamples)).var(ddof=1)
    spread = 3 * math.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - spread < var < sigma ** 2 + spread)


def _upper_gamma(a: float, x: float) -> float:
    """Q(a, x) = Gamma(a, x) / Gamma(a), the regularized upper incomplete gamma function."""
    if x <= 0:
        return 1.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:  # P(a, x) as a series: sum of x^n / (a (a+1) ... (a+n))
        term = total = 1.0 / a
        n = 1
        while abs(term) > abs(total) * 1e-15 and n < 10000:
            term *= x / (a + n)
            total += term
            n += 1
        return max(0.0, 1.0 - total * math.exp(log_front))
    # Q(a, x) as the continued fraction 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...))
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    frac = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        step = d * c
        frac *= step
        if abs(step - 1) < 1e-15:
            break
    return math.exp(log_front) * frac


def chi_square_check(generator, buckets: list, probs, nsamples: int = 1000000) -> tuple:
    """(p-value, observed counts, expected counts) of the chi-square test of
    generator(nsamples) against `probs`: `buckets` are (low, high) ranges for a continuous
    generator, or the values of a discrete one."""
    if not isinstance(buckets, list) or len(probs) != len(buckets):
        raise ValueError("chi_square_check: buckets must be a list as long as probs")
    samples = np.asarray(generator(nsamples)).reshape(-1)
    expected = (nsamples * np.asarray(probs, np.float64)).astype(np.int64)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.asarray(buckets, np.float64).reshape(-1)
        if np.any(np.diff(edges) < 0):
            raise ValueError("chi_square_check: the buckets must ascend and not overlap")
        slots = np.searchsorted(edges, samples, side="right")
        inside = slots % 2 == 1  # between a bucket's low and high edge
        observed = np.bincount(slots[inside] // 2, minlength=len(buckets))[:len(buckets)]
    else:
        observed = np.array([(samples == value).sum() for value in buckets], np.int64)
    stat = float((((observed - expected) ** 2) / np.maximum(expected, 1e-12)).sum())
    return _upper_gamma((len(buckets) - 1) / 2.0, stat / 2.0), observed, expected


def verify_generator(generator, buckets, probs, nsamples: int = 1000000, nrepeat: int = 5,
                     success_rate: float = 0.2, alpha: float = 0.05) -> list:
    """The p-values of `nrepeat` chi-square checks; AssertionError unless at least
    success_rate of them exceed alpha."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvalues = [r[0] for r in results]
    if sum(p > alpha for p in pvalues) < nrepeat * success_rate:
        raise AssertionError("Generator test fails, Chi-square p=%s, obs_freq=%s, "
                             "expected_freq=%s.\nbuckets=%s, probs=%s"
                             % (pvalues, [r[1] for r in results], [r[2] for r in results],
                                buckets, probs))
    return pvalues
