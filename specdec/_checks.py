"""Input validation shared by every public entry point (plain Python, no NumPy).

The graded rule (`verify.py`) and the sampler (`sampling.py`) take the same four
kinds of input, so they share one validator. It copies its inputs into fresh
lists of floats (callers may pass lists, tuples or NumPy arrays; nothing is
ever mutated) and raises an error that names the argument and the position:

    >>> check_row([0.5, 0.7], "draft_probs[1]")
    Traceback (most recent call last):
    ...
    ValueError: draft_probs[1] sums to 1.2, not 1: pass probabilities (softmax of the logits), not logits or weights

Wrong types raise TypeError; wrong values (lengths, ranges, sums) ValueError.
"""

import math
import numbers
import operator
from collections.abc import Mapping, Set

# A row must sum to 1 within this much. float32 softmax over a 32k-token
# vocabulary is off by ~1e-6; logits or unnormalised weights are off by far more.
SUM_TOLERANCE = 1e-4


def check_sequence(value, name):
    """Return `value` as a list, or raise TypeError naming it."""
    # Sets and dicts have a length but no order; a 0-d array has a length attribute that raises.
    if (isinstance(value, (str, bytes, Set, Mapping)) or not hasattr(value, "__len__")
            or not hasattr(value, "__iter__") or getattr(value, "ndim", 1) == 0):
        raise TypeError(f"{name} must be a sequence (list, tuple or array), got {type(value).__name__}")
    return list(value)


def to_float(value, name):
    """`float(value)`, except that a number too large for a float is a ValueError naming it.

    >>> to_float(10 ** 400, "logits[0]")
    Traceback (most recent call last):
    ...
    ValueError: logits[0] is an int of 401 digits, too large for a float
    """
    try:
        return float(value)
    except OverflowError:
        raise too_large(value, name) from None


def check_nonnegative(value, name):
    """`value` as a float: a real number (TypeError otherwise, as for every wrong type), >= 0, not NaN.

    >>> check_nonnegative(-0.1, "eps")
    Traceback (most recent call last):
    ...
    ValueError: eps must be a number >= 0, got -0.1
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number >= 0, got {type(value).__name__} {shown(value)}")
    if not value >= 0:   # also refuses NaN
        raise ValueError(f"{name} must be a number >= 0, got {shown(value)}")
    return to_float(value, name)


def check_bool(value, name, meaning=""):
    """`value` must be True or False (Python's bool or NumPy's), else TypeError: a truthy "no" would switch silently.

    >>> check_bool("no", "replace")
    Traceback (most recent call last):
    ...
    TypeError: replace must be True or False, got str 'no'
    """
    if type(value).__name__ not in ("bool", "bool_"):   # numpy.bool_ / numpy.bool, without importing NumPy
        raise TypeError(f"{name} must be True or False{meaning}, got {type(value).__name__} {value!r}")
    return bool(value)


def too_large(value, name):
    """The ValueError `to_float` raises for a number too large for a float (returned, not raised)."""
    digits = len(str(abs(int(value)))) if isinstance(value, numbers.Integral) else "too many"
    return ValueError(f"{name} is an int of {digits} digits, too large for a float")


def first_too_large(**values):
    """The ValueError naming the first number too large for a float among `values` (numbers, or rows of them).

    For callers that convert on a fast path and catch OverflowError only when it happens.

    >>> first_too_large(weight=0.5, p=[0.5, 10 ** 400])
    ValueError('p[1] is an int of 401 digits, too large for a float')
    """
    for name, value in values.items():
        entries = [(f"{name}[{j}]", v) for j, v in enumerate(value)] if hasattr(value, "__iter__") else [(name, value)]
        for label, v in entries:
            try:
                float(v)
            except OverflowError:
                return too_large(v, label)
            except (TypeError, ValueError):
                pass
    return ValueError("a number is too large for a float")


def shown(value, limit=10 ** 12):
    """An int as a message shows it: itself, or 'an int of 401 digits' when it would fill the screen."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and abs(value) >= limit:
        return f"an int of {len(str(abs(int(value))))} digits"
    return repr(value)


def check_probability(value, name):
    """Return `value` as a float in [0, inf), or raise naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = to_float(value, name)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{name} is {value}: probabilities must be finite")
    if value < 0.0:
        raise ValueError(f"{name} is {value}, a negative probability (logits passed by mistake?)")
    return value


def check_row(row, name, width=None, width_from=None):
    """Return `row` as a list of floats that is a probability distribution.

    With `width`, the row must have that many entries, as the row named
    `width_from` has: the draft and the target share one vocabulary.
    """
    row = check_sequence(row, name)
    if not row:
        raise ValueError(f"{name} is empty: a distribution needs at least one token")
    if width is not None and len(row) != width:
        raise ValueError(f"{name} has {len(row)} entries but {width_from} has {width}")
    row = [check_probability(v, f"{name}[{j}]") for j, v in enumerate(row)]
    total = math.fsum(row)
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"{name} sums to {total:.6g}, not 1: pass probabilities "
                         "(softmax of the logits), not logits or weights")
    return row


def check_token(token, name, vocab_size):
    """Return `token` as an int in [0, vocab_size), or raise naming it."""
    # Python's bool, and NumPy's (type name "bool" or "bool_"), which older NumPy lets pass operator.index.
    if isinstance(token, bool) or type(token).__name__ in ("bool", "bool_"):
        raise TypeError(f"{name} is {token!r}: a token id must be an integer, not a bool")
    try:
        token = operator.index(token)  # accepts int and NumPy integers, refuses 2.0
    except TypeError:
        raise TypeError(f"{name} must be an integer token id, got {type(token).__name__} {token!r}") from None
    if not 0 <= token < vocab_size:
        raise ValueError(f"{name} is {shown(token)}, outside the vocabulary [0, {vocab_size})")
    return token


def check_uniform(u, name):
    """Return `u` as a float in [0, 1], or raise naming it."""
    if isinstance(u, bool) or not isinstance(u, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(u).__name__} {u!r}")
    u = to_float(u, name)
    if not 0.0 <= u <= 1.0:  # also refuses NaN
        raise ValueError(f"{name} is {u}, outside [0, 1]")
    return u


def check_draft(draft_tokens, draft_probs, target_probs):
    """Validate a draft of K tokens and its rows; return them as fresh lists.

    Rules: len(draft_probs) == K, len(target_probs) >= K, every row of both is
    a distribution over the same vocabulary of V tokens, every drafted token is
    an id in [0, V) that the draft could have proposed (q(x) > 0).
    Extra target rows past K + 1 are validated too but never used.
    """
    draft_tokens = check_sequence(draft_tokens, "draft_tokens")
    draft_probs = check_sequence(draft_probs, "draft_probs")
    target_probs = check_sequence(target_probs, "target_probs")
    k = len(draft_tokens)
    if len(draft_probs) != k:
        raise ValueError(f"len(draft_probs) is {len(draft_probs)} but len(draft_tokens) is {k}: "
                         "one draft row per drafted token")
    _check_scores_every_draft(target_probs, k)
    if not target_probs:
        return [], [], []  # K = 0 and no bonus row: nothing to verify
    p = check_target_rows(target_probs)
    vocab = len(p[0])
    q = [check_row(row, f"draft_probs[{i}]", vocab, f"target_probs[{i}]")
         for i, row in enumerate(draft_probs)]
    tokens = [check_token(t, f"draft_tokens[{i}]", vocab) for i, t in enumerate(draft_tokens)]
    for i, x in enumerate(tokens):
        if q[i][x] == 0.0:
            raise ValueError(f"draft_probs[{i}][{x}] is 0 but draft_tokens[{i}] is {x}: "
                             "the draft cannot have proposed a token it gives probability 0")
    return tokens, q, p


def _check_scores_every_draft(target_probs, k):
    if len(target_probs) < k:
        raise ValueError(f"len(target_probs) is {len(target_probs)} but len(draft_tokens) is {k}: "
                         "the target must score every drafted position (K rows, or K + 1 for the bonus)")


def check_target_rows(target_probs):
    """Validate a non-empty list of target rows over one vocabulary; return them as lists of floats."""
    p = [check_row(target_probs[0], "target_probs[0]")]
    return p + [check_row(row, f"target_probs[{i}]", len(p[0]), "target_probs[0]")
                for i, row in enumerate(target_probs[1:], start=1)]


def check_scored(draft_tokens, target_probs):
    """Validate a draft of K tokens and the target's rows, for rules that never read q (greedy, typical)."""
    draft_tokens = check_sequence(draft_tokens, "draft_tokens")
    target_probs = check_sequence(target_probs, "target_probs")
    k = len(draft_tokens)
    _check_scores_every_draft(target_probs, k)
    if not target_probs:
        return [], []
    p = check_target_rows(target_probs)
    return [check_token(t, f"draft_tokens[{i}]", len(p[0])) for i, t in enumerate(draft_tokens)], p


def check_samples(random_samples, k):
    """Validate K uniform samples in [0, 1]; return them as a list of floats."""
    random_samples = check_sequence(random_samples, "random_samples")
    if len(random_samples) != k:
        raise ValueError(f"len(random_samples) is {len(random_samples)} but len(draft_tokens) is {k}: "
                         "one uniform sample per drafted token")
    return [check_uniform(u, f"random_samples[{i}]") for i, u in enumerate(random_samples)]
