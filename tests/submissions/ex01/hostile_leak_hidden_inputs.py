"""Hostile: tries to carry the hidden cases' inputs out to the learner (an answer sheet for classmates, issue 25).

Every class is graded on the same hidden cases (the exercise's and the seed's), so a file that could print the
inputs it is called with into its own feedback could build an answer sheet. It tries every text of its own
that a report might show: an exception's message, an exception class named after the data, a returned value
that is a string, a line number far beyond its file (code compiled under its own file name), sys.exit with a
message. Deserved verdict: the public cases, whose inputs are the statement's, show what they show; no
hidden case's message holds anything of its inputs (only the builtin exception's name, the file's own lines,
the judge's words). It earns its length checks' points and nothing else.
"""


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    k = len(draft_tokens)
    if len(draft_probs) != k or len(random_samples) != k or len(target_probs) < k:
        raise ValueError("lengths do not match")
    leak = repr([draft_tokens, draft_probs, target_probs, random_samples])
    way = len(leak) % 5
    if way == 0:
        raise RuntimeError("LEAK " + leak)
    if way == 1:
        raise type("LEAK_" + "_".join(str(t) for t in draft_tokens) + "_" + str(len(leak)), (Exception,), {})(leak)
    if way == 2:
        return {"accepted_tokens": "LEAK " + leak, "bonus_token": None, "acceptance_count": 0}
    if way == 3:
        exec(compile("\n" * (1000 + len(leak)) + "raise LookupError('LEAK')", __file__, "exec"))
    raise SystemExit("LEAK " + leak)
