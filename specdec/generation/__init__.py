"""Generation with models (NumPy): the rules run on real rows, step after step, and timed honestly.

    interface   the Draft and Target protocols speculative generation asks of the models; RowDraft
    rows        the row operations of `specdec.rules` on NumPy rows (residual, draw, argmax)
    decode      plain and speculative generation with any rule; `python -m specdec generate`
    trees       draft trees: which candidates a step spends its positions on (full, threshold)
    adaptive    gamma="auto": each step's gamma from alpha and the costs measured as the generation runs
    race        several drafts against plain decoding on the same prompts, interleaved, c and r in situ
    measure     honest timing: fresh prompts, interleaved pairs, bootstrap intervals, cold c and r
    roofline    x @ W by weight size and rows, and the machine's caches: where the speedup comes from

The models themselves live in `specdec.models`. Importing this package imports nothing;
each module imports NumPy.
"""
