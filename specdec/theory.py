"""The theory, as functions: what one verification step emits, and what speculation buys.

Plain Python, Leviathan et al. 2023 (target p, draft q, draft length gamma,
acceptance rate alpha, cost ratio c = time of one draft call / one target call):

    beta(p, q)          = sum_x min(p(x), q(x)) = 1 - TV(p, q)       acceptance_rate
    E[tokens per call]  = (1 - alpha^(gamma+1)) / (1 - alpha)          expected_tokens_per_step
    wall-time speedup   = (1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1))   walltime_speedup
    P(n accepted)       = alpha^n (1 - alpha) for n < gamma, alpha^gamma for n = gamma

and, by enumeration rather than sampling, the distribution of the token one
accept-or-resample step emits (`exact_output_distribution`), which equals p.
For whole steps of several tokens (the token rule, block verification, trees,
greedy and typical acceptance) on toy models, see `specdec.exact`.

    >>> [round(v, 12) for v in exact_output_distribution([0.1, 0.6, 0.3], [0.5, 0.2, 0.3])]
    [0.1, 0.6, 0.3]
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

from ._checks import check_row, shown, to_float
from .residual import residual_distribution


def _check_pair(p, q):
    p = check_row(p, "p")
    q = check_row(q, "q", len(p), "p")
    return p, q


# The longest draft the formulas accept: far beyond any real one (engines draft 1 to 10 tokens), and
# small enough that the sums over 0..gamma (and optimal_draft_length's search) finish at once.
MAX_GAMMA = 10_000


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha must be a real number, got {type(alpha).__name__}")
    alpha = to_float(alpha, "alpha")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha is {alpha}, outside [0, 1]")
    return alpha


def _check_gamma(gamma, name="gamma"):
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(gamma).__name__}")
    if not 0 <= gamma <= MAX_GAMMA:
        raise ValueError(f"{name} is {shown(gamma)}; it must be in [0, {MAX_GAMMA}]")
    return int(gamma)


def _check_c(c):
    if isinstance(c, bool) or not isinstance(c, numbers.Real):
        raise TypeError(f"c must be a real number, got {type(c).__name__}")
    c = to_float(c, "c")
    if not (c >= 0.0 and math.isfinite(c)):
        raise ValueError(f"c is {c}, it must be a finite cost ratio >= 0")
    return c


def exact_output_distribution(p: Sequence[float], q: Sequence[float]) -> list[float]:
    """Exact distribution of the token emitted when x ~ q is verified against p.

    Enumerates every drafted x: with probability q(x) min(1, p(x)/q(x)) it is
    emitted; with the rest of q(x) a token is drawn from the residual.
    The result equals p (Leviathan et al. 2023, Appendix A.1; Chen et al. Theorem 1).

    >>> exact_output_distribution([0.0, 1.0], [1.0, 0.0])  # disjoint supports: always resample
    [0.0, 1.0]
    """
    p, q = _check_pair(p, q)
    residual = residual_distribution(p, q)
    out = [0.0] * len(p)
    for x, qx in enumerate(q):
        if qx == 0.0:
            continue  # never drafted
        accept = min(1.0, p[x] / qx)
        out[x] += qx * accept
        for y, r in enumerate(residual):
            out[y] += qx * (1.0 - accept) * r
    return out


def acceptance_rate(p: Sequence[float], q: Sequence[float]) -> float:
    """beta = sum_x min(p(x), q(x)) = 1 - TV(p, q): the chance one draft x ~ q is accepted.

    >>> acceptance_rate([0.1, 0.6, 0.3], [0.5, 0.2, 0.3])  # 0.1 + 0.2 + 0.3
    0.6
    """
    p, q = _check_pair(p, q)
    return math.fsum(min(pi, qi) for pi, qi in zip(p, q))


def expected_tokens_per_step(alpha: float, gamma: int) -> float:
    """(1 - alpha^(gamma+1)) / (1 - alpha): tokens emitted per target call; gamma + 1 at alpha = 1.

    >>> expected_tokens_per_step(0.5, 2)  # 1 + 0.5 + 0.25
    1.75
    """
    alpha, gamma = _check_alpha(alpha), _check_gamma(gamma)
    if alpha == 1.0:
        return float(gamma + 1)
    if alpha > 0.5:
        # Subtle: near alpha = 1 the closed form divides two tiny, cancelled differences
        # (relative error ~1e-16 / (1 - alpha)); the sum 1 + alpha + ... + alpha^gamma has none.
        return math.fsum(alpha ** k for k in range(gamma + 1))
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def walltime_speedup(alpha: float, gamma: int, c: float) -> float:
    """(1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1)): speedup over plain decoding.

    c = cost of one draft call / cost of one target call (c >= 0). Below 1 it is a slowdown.

    >>> walltime_speedup(0.5, 2, 0.125)  # 1.75 / 1.25
    1.4
    """
    c = _check_c(c)
    return expected_tokens_per_step(alpha, gamma) / (gamma * c + 1.0)


def optimal_draft_length(alpha: float, c: float, max_gamma: int = 64) -> int:
    """The integer gamma in [0, max_gamma] that maximises `walltime_speedup` (smallest on ties).

    gamma = 0 means: do not speculate.

    >>> optimal_draft_length(0.8, 0.05)  # speedups 3.082, 3.092, 3.078 at gamma 7, 8, 9
    8
    """
    max_gamma = _check_gamma(max_gamma, "max_gamma")
    alpha, c = _check_alpha(alpha), _check_c(c)
    if c == 0 and alpha > 0:
        return max_gamma  # free drafts: the speedup grows with gamma forever (floats would go flat first)
    speedups = [walltime_speedup(alpha, g, c) for g in range(max_gamma + 1)]
    return max(range(max_gamma + 1), key=lambda g: (speedups[g], -g))


def accepted_count_distribution(alpha: float, gamma: int) -> list[float]:
    """[P(n = 0), ..., P(n = gamma)] accepted drafts when each is accepted i.i.d. with alpha.

    >>> accepted_count_distribution(0.5, 2)  # 0.5, 0.5 * 0.5, 0.5^2
    [0.5, 0.25, 0.25]
    """
    alpha, gamma = _check_alpha(alpha), _check_gamma(gamma)
    return [alpha ** n * (1.0 - alpha) for n in range(gamma)] + [alpha ** gamma]
