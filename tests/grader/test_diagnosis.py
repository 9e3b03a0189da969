"""grader/diagnose.py: one line a learner acts on, named from which cases failed and how.

References: small functions written here, each with a known fault: a result's shape wrong in every case
(a missing key, a float token id, a tuple for a dict), and two catalogued mistakes at once (their signatures'
union); the diagnosis must name that fault, not a mistake it does not have.
"""

from grader import check
from grader.registry import exercise
from helpers import ex01_argument_checks
from specdec import verify_speculative_tokens


def _missing_count(*args):
    out = verify_speculative_tokens(*args)
    del out["acceptance_count"]
    return out


def _float_bonus(*args):
    out = verify_speculative_tokens(*args)
    if out["bonus_token"] is not None:
        out["bonus_token"] = float(out["bonus_token"])
    return out


def _a_tuple(*args):
    out = verify_speculative_tokens(*args)
    return (out["accepted_tokens"], out["bonus_token"], out["acceptance_count"])


def _two_mistakes(draft_tokens, draft_probs, target_probs, random_samples):
    """ex01 with u < ratio (strict_less) and argmax ties to the higher index (tie_high)."""
    ex01_argument_checks(draft_tokens, draft_probs, target_probs, random_samples)
    k = len(draft_tokens)

    def top(row):
        return max(range(len(row)), key=lambda j: (row[j], j))
    accepted = []
    for i, x in enumerate(draft_tokens):
        if random_samples[i] < min(1.0, target_probs[i][x] / draft_probs[i][x]):
            accepted.append(x)
            continue
        excess = [max(0.0, a - b) for a, b in zip(target_probs[i], draft_probs[i])]
        row = excess if sum(excess) > 0 else target_probs[i]
        return {"accepted_tokens": accepted, "bonus_token": top(row), "acceptance_count": len(accepted)}
    bonus = top(target_probs[k]) if len(target_probs) > k else None
    return {"accepted_tokens": accepted, "bonus_token": bonus, "acceptance_count": len(accepted)}


def test_a_missing_key_is_named_not_a_mistake_of_the_rule():
    report = check(_missing_count, exercise="ex01", quiet=True)
    assert "the dict has no key 'acceptance_count'" in report.diagnosis and "mistake" not in report.diagnosis


def test_a_float_token_id_is_named_not_the_no_stop_mistake():
    report = check(_float_bonus, exercise="ex01", quiet=True)
    assert "bonus_token is a float" in report.diagnosis and "rejection" not in report.diagnosis


def test_a_returned_tuple_is_called_a_tuple():
    report = check(_a_tuple, exercise="ex01", quiet=True)
    assert "returned a tuple" in report.diagnosis and "returned a list" not in report.diagnosis


def test_two_mistakes_at_once_are_both_named():
    causes = {m.name: m.cause for m in exercise("ex01").mistakes}
    report = check(_two_mistakes, exercise="ex01", quiet=True)
    assert report.diagnosis.startswith("Most likely causes, two at once")
    assert causes["strict_less"] in report.diagnosis and causes["tie_high"] in report.diagnosis
