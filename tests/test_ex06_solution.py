"""exercises/ex06_block/solution.py, the exercise's self-contained reference, equals specdec.block.block_verify.

Independent of the grader: the solution is loaded from its file (it imports nothing from specdec) and
called with the same seeds as the library on many random blocks, including exact zeros, p == q rows,
K = 0 and missing bonus rows; both must return the same dict and refuse the same bad input. Its doctests run.
"""

import doctest
import importlib.util
import os
import random

import pytest

from specdec.block import block_verify

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "exercises", "ex06_block", "solution.py")


@pytest.fixture(scope="module")
def solution():
    spec = importlib.util.spec_from_file_location("ex06_solution", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def random_block(gen):
    v, k = gen.randint(1, 5), gen.randint(0, 4)
    def row():
        w = [gen.choice([0, 0, 1, 2, 5, gen.random()]) for _ in range(v)]
        w[gen.randrange(v)] += 1                                        # some mass
        return [x / sum(w) for x in w]
    q = [row() for _ in range(k)]
    p = [row() for _ in range(k + gen.choice([0, 1, 1, 1, 2]))]
    if k and gen.random() < 0.2:
        p[:k] = [list(r) for r in q]                                    # p == q: 0/0 thresholds
    tokens = [gen.choices(range(v), r)[0] for r in q]
    return tokens, q, p


def test_the_solution_equals_block_verify_on_seeded_cases(solution):
    gen, kept = random.Random(6), 0
    for case in range(2000):
        tokens, q, p = random_block(gen)
        want = block_verify(tokens, q, p, rng=random.Random(case))
        assert solution.block_verify(tokens, q, p, random.Random(case)) == want, case
        kept += want["acceptance_count"]
    assert kept > 1000                                                  # the cases exercise the rule


@pytest.mark.parametrize("args", [
    ([0], [[0.0, 1.0]], [[0.5, 0.5]]),           # q(x) = 0
    ([0, 1], [[0.5, 0.5]], [[0.5, 0.5]] * 3),    # len(draft_probs) != K
    ([0], [[0.5, 0.5]], []),                     # target too short
    ([2], [[0.5, 0.5]], [[0.5, 0.5]]),           # id outside [0, V)
    ([0], [[0.5, 0.5]], [[0.9, 0.9]]),           # not a distribution
])
def test_the_solution_refuses_what_block_verify_refuses(solution, args):
    with pytest.raises(ValueError):
        block_verify(*args, rng=0)
    with pytest.raises(ValueError):
        solution.block_verify(*args, random.Random(0))


def test_the_solution_doctests(solution):
    result = doctest.testmod(solution)
    assert result.attempted >= 2 and result.failed == 0
