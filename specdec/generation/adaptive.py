"""gamma="auto": the draft length chosen during a generation, from alpha and the cost of calls measured as it runs.

The best gamma maximises theory(c, r) = E(alpha, gamma) / (r(gamma) + gamma c)
(lesson 06; `measure.predicted_speedup`), and every term of it moves with the
machine: the same machine, busy or quiet, gives another r(gamma) and with it
another best gamma (lesson 09 measures r). So speculative generation with
gamma="auto" measures them on the fly, on its own calls:

- alpha: accepted / tested drafts so far, pooled, after a prior of 2 accepted
  in 3 tested (so the first steps do not swing to gamma 1 or to the longest);
- the cost of a target call that computes n positions, cost(n) = F + P n, a line
  fitted to the median CPU time of this generation's calls at each n (the first
  call, which computes the prompt, left out; the median, because a call that also
  fills the next window's cache costs more);
- a draft step's CPU time, c = draft step / cost(1).

The first steps try gamma 1, 4 and 8 (a line needs two n), then each step takes
the best gamma by theory(c, r), and one step in 8 its neighbour (above, then
below), so the line stays measured where it is used. CPU time, not the wall
clock: another program's load does not move the choice.

The text stays lossless: a step's gamma is chosen before its drafts and uniforms,
from what earlier steps did. At T = 0 the text is the target's greedy text
whatever gammas are chosen; at T > 0 the seed fixes the draws but the text also
depends on the gammas, which depend on the clock, so a seed no longer fixes it.

    >>> chooser = GammaChooser(max_gamma=8)
    >>> [chooser.next_gamma() for _ in range(1)]          # the first step explores
    [1]
    >>> chooser.record(1, 2, 0.0011, 0.00001, accepted=1, tested=1)
    >>> chooser.next_gamma(), chooser.next_gamma(remaining=2)   # the second explores; never past the end
    (4, 2)
"""

import time

import numpy as np

from .measure import predicted_speedup

EXPLORE = (1, 4, 8)          # the first steps' gammas (capped at max_gamma)
PRIOR = (2.0, 3.0)           # alpha's prior: accepted, tested


class GammaChooser:
    """Chooses each step's gamma from what the generation's earlier steps measured (module docstring)."""

    def __init__(self, max_gamma=8, clock=time.process_time):
        if isinstance(max_gamma, bool) or not isinstance(max_gamma, int) or max_gamma < 1:
            raise ValueError(f"max_gamma must be an int >= 1, got {max_gamma!r}")
        self.max_gamma, self.clock = max_gamma, clock
        self.accepted, self.tested = PRIOR
        self.calls = {}                       # positions scored -> CPU seconds of each call
        self.draft_seconds, self.draft_steps = 0.0, 0
        self.steps, self.first = 0, True
        self._line, self._since_fit = None, 0
        self.explore = sorted({min(g, max_gamma) for g in EXPLORE})

    def alpha(self):
        return self.accepted / self.tested

    def cost_line(self):
        """(F, P): cost(n) = F + P n, the least-squares line through the median cost at each n measured; None
        while fewer than two n have been measured. Refitted every 4 calls recorded (a fit costs far more than a
        step's arithmetic)."""
        if self._line is None or self._since_fit >= 4:
            ns = sorted(self.calls)
            if len(ns) < 2:
                return None
            medians = [float(np.median(self.calls[n])) for n in ns]
            mean_n, mean_t = sum(ns) / len(ns), sum(medians) / len(ns)
            slope = sum((n - mean_n) * (t - mean_t) for n, t in zip(ns, medians)) / sum((n - mean_n) ** 2 for n in ns)
            slope = max(slope, 0.0)
            self._line, self._since_fit = (mean_t - slope * mean_n, slope), 0
        return self._line

    def predicted(self, gamma, line=None):
        """theory(c, r) at this gamma from the measurements so far."""
        F, P = line or self.cost_line()
        one = max(F + P, 1e-12)
        c = (self.draft_seconds / self.draft_steps if self.draft_steps else 0.0) / one
        return predicted_speedup(min(self.alpha(), 1.0), gamma, c, r=(F + P * (gamma + 1)) / one)

    def best(self):
        line = self.cost_line()
        return max(range(1, self.max_gamma + 1), key=lambda g: (self.predicted(g, line), -g))

    def next_gamma(self, remaining=None):
        """The gamma of the next step; `remaining`: the most drafts that can still be used (tokens left - 1)."""
        step = self.steps
        self.steps += 1
        if step < len(self.explore) or self.cost_line() is None:
            g = self.explore[step % len(self.explore)]
        else:
            g = self.best()
            if step % 8 == 0:                  # keep the line measured around the choice
                g = min(self.max_gamma, g + 1) if (step // 8) % 2 else max(1, g - 1)
        return g if remaining is None else min(g, remaining)

    def record(self, gamma, positions, call_seconds, draft_seconds, accepted, tested):
        """What a step measured: its gamma, the positions its target call scored, the call's and the drafting's
        CPU seconds, and the drafts accepted and tested."""
        if self.first:                         # the prompt's call: not a verification call's cost
            self.first = False
        else:
            self.calls.setdefault(positions, []).append(call_seconds)
            self._since_fit += 1
        if gamma:
            self.draft_seconds += draft_seconds
            self.draft_steps += gamma
        self.accepted += accepted
        self.tested += tested
