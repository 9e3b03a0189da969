"""The shipped draft's rows cut to k ids (specdec/models/topk.py), against references computed here from dense rows."""

import numpy as np
import pytest

from specdec.generation.decode import speculative_generate
from specdec.generation.interface import Draft
from specdec.models import NGramModel, TopKDraft
from specdec.models.topk import SparseRow, top_entries

TEXT = "the cat sat on the mat; the dog sat on the log. a cat, a dog, a mat and a log."


@pytest.fixture(scope="module")
def small():
    """(ngram, TopKDraft with k = 4) over the characters of TEXT."""
    chars = sorted(set(TEXT))
    ids = [chars.index(c) for c in TEXT]
    ngram = NGramModel.fit(ids, vocab_size=len(chars), order=3)
    top_ids, top_q = top_entries(ngram, 4)
    return ngram, TopKDraft(ngram, top_ids, top_q), ids


def reference_rows(ngram, k, temperature=1.0):
    """Every row of the n-gram cut to its k likeliest ids (ties: lower id), tempered, renormalised: [rows, V]."""
    dense = ngram.dense_table()
    out = np.zeros_like(dense)
    for r, row in enumerate(dense):
        keep = sorted(range(len(row)), key=lambda x: (-row[x], x))[:k]
        w = np.array([row[x] for x in keep], np.float16).astype(float) ** (1.0 / temperature)
        out[r, keep] = w / w.sum()
    return out


def test_top_entries_are_each_rows_likeliest_ids(small):
    ngram, _, _ = small
    ids, q = top_entries(ngram, 4)
    dense = ngram.dense_table()
    for r, row in enumerate(dense):
        assert ids[r].tolist() == sorted(range(len(row)), key=lambda x: (-row[x], x))[:4]
        np.testing.assert_allclose(q[r].astype(float), row[ids[r]], rtol=1e-3)


@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0])
def test_rows_are_the_cut_rows_tempered_and_renormalised(small, temperature):
    ngram, draft, ids = small
    ref = reference_rows(ngram, 4, temperature)
    contexts = [ids[:t] for t in range(len(ids))]
    got = draft.next_token_probs(contexts, temperature)
    want = ref[[ngram.row_index(c) for c in contexts]]
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(got.sum(1), 1.0, atol=1e-12)
    assert (np.count_nonzero(got, axis=1) <= 4).all()


def test_sparse_row_reads_as_its_dense_row(small):
    ngram, draft, ids = small
    for t in range(0, len(ids), 7):
        x, row = draft.propose(ids[:t], 0.7, np.random.default_rng(t))
        dense = draft.probs(ids[:t], 0.7)
        assert isinstance(row, SparseRow) and len(row) == draft.V
        assert [row[v] for v in range(draft.V)] == dense.tolist()
        assert row[np.int64(x)] == row[x] > 0                # NumPy ids index it too
        np.testing.assert_array_equal(np.asarray(row), dense)
        p = np.full(draft.V, 1.0 / draft.V)
        np.testing.assert_array_equal(np.maximum(p - row, 0.0), np.maximum(p - dense, 0.0))
        assert row[-1] == 0.0 and row[10 ** 6] == 0.0          # off the vocabulary: probability 0, no error


def test_draws_follow_the_cut_row(small):
    """Chi-square of 20,000 draws at a fixed seed against q_k (tolerance: the 0.999 quantile, 16.3 at 3 dof).

    Power check: the same counts against the UNCUT row q (which gives mass to ids never drawn) fail."""
    ngram, draft, ids = small
    context = ids[:5]
    rng, n = np.random.default_rng(1), 20_000
    counts = np.bincount([draft.propose(context, 1.0, rng)[0] for _ in range(n)], minlength=draft.V)
    q = draft.probs(context, 1.0)
    seen = q > 0
    assert counts[~seen].sum() == 0
    chi2 = (((counts - n * q)[seen]) ** 2 / (n * q[seen])).sum()
    assert chi2 < 16.3, chi2
    full = ngram.probs(context)
    chi2_full = ((counts - n * full) ** 2 / (n * full)).sum()
    assert chi2_full > 100, chi2_full


def test_greedy_step_is_the_uncut_argmax(small):
    ngram, draft, ids = small
    for t in range(len(ids)):
        best = int(np.argmax(ngram.dense_table()[ngram.row_index(ids[:t])]))
        assert draft.argmax_next(ids[:t]) == best == draft.propose(ids[:t], 0, None)[0]


def test_the_same_seed_gives_the_same_draws(small):
    _, draft, ids = small
    a = [draft.propose(ids[:t], 1.0, rng)[0] for rng in [np.random.default_rng(3)] for t in range(40)]
    b = [draft.propose(ids[:t], 1.0, rng)[0] for rng in [np.random.default_rng(3)] for t in range(40)]
    assert a == b


def test_bad_tables_are_refused(small):
    ngram, _, _ = small
    ids, q = top_entries(ngram, 4)
    with pytest.raises(ValueError, match="one row per n-gram row"):
        TopKDraft(ngram, ids[1:], q[1:])
    with pytest.raises(ValueError, match="top_q"):
        TopKDraft(ngram, ids, -q)
    with pytest.raises(ValueError, match="temperature"):
        TopKDraft(ngram, ids, q).next_token_probs([[0]], 0)


def test_the_shipped_draft_is_a_top_k_draft(models):
    draft, target = models
    assert isinstance(draft, TopKDraft) and isinstance(draft, Draft)
    assert draft.k == 8 and draft.V == target.V
    rows = draft.next_token_probs([target.encode("The "), target.encode("import os")], 1.0)
    np.testing.assert_allclose(rows.sum(1), 1.0)
    assert (np.count_nonzero(rows, axis=1) == 8).all()


@pytest.mark.slow
def test_speculative_sampling_with_the_cut_draft_is_lossless(models):
    """The first token of speculative generation at T = 1 is distributed as p(. | prompt), although q_k is 0 off
    its k ids: chi-square over 4,000 fixed-seed runs on the ids p gives >= 1% (the rest pooled), < the 0.999
    quantile. Power check: the same counts against q_k itself fail."""
    draft, target = models
    prompt = target.encode("The cat ")
    p = target.probs_for_positions(prompt, len(prompt), 1.0)[0]
    n, firsts = 4000, []
    for s in range(n):
        firsts.append(speculative_generate(draft, target, prompt, 4, 3, 1.0, s).tokens[0])   # 3 drafts
    counts = np.bincount(firsts, minlength=target.V)
    big = p >= 0.01

    def chi2(probs):
        e = np.r_[n * probs[big], n * probs[~big].sum()]
        o = np.r_[counts[big], counts[~big].sum()]
        return float(((o - e) ** 2 / np.maximum(e, 1e-9)).sum()), int(big.sum())

    stat, dof = chi2(p)
    assert stat < {1: 10.8, 2: 13.8, 3: 16.3, 4: 18.5, 5: 20.5, 6: 22.5, 7: 24.3, 8: 26.1}.get(dof, 3 * dof), stat
    assert chi2(draft.probs(prompt, 1.0))[0] > 3 * stat
