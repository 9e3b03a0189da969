"""Helpers the lessons share: formatting rows and drawing random rows (plain Python).

The notebooks print every row through `fmt`, formatted numbers rather than raw
reprs, so that their stored outputs (compared by nbval) stay the same across
Python and NumPy versions. Their "build == library" checks run on rows from
`random_row`: random distributions with exact zeros, so that supports differ.

    >>> fmt([0.65, 0.2, 0.1, 0.05])
    '[0.6500, 0.2000, 0.1000, 0.0500]'
    >>> import random
    >>> row = random_row(random.Random(3), 6)
    >>> len(row), abs(sum(row) - 1) < 1e-12, all(v >= 0 for v in row)
    (6, True, True)
"""


def fmt(row, digits=4):
    """The row as "[a, b, ...]" with `digits` decimals: floats, ints, Fractions or NumPy scalars.

    >>> from fractions import Fraction
    >>> fmt([Fraction(2, 3), 0, 1], digits=3)
    '[0.667, 0.000, 1.000]'
    """
    return "[" + ", ".join(f"{float(v):.{digits}f}" for v in row) + "]"


def random_row(rng, size, zero_share=0.3):
    """A random distribution over `size` tokens: each entry is 0.0 with probability zero_share, never all of them.

    rng is a `random.Random` (its random() and randrange() are used), so the same seed gives the same row
    on every platform; the weights are uniform on [0, 1), then normalized.

    >>> import random
    >>> random_row(random.Random(0), 3, zero_share=1.0)    # every weight drawn 0: one token gets all the mass
    [0.0, 1.0, 0.0]
    """
    weights = [0.0 if rng.random() < zero_share else rng.random() for _ in range(size)]
    if not any(weights):
        weights[rng.randrange(size)] = 1.0
    total = sum(weights)
    return [w / total for w in weights]


class folded:
    """Printed answers, shown folded: a closed HTML <details> output, which stays closed when the cell runs again
    (JupyterLab's Run All unfolds a collapsed output, never a closed <details>), on the site and on GitHub too.

        with folded("Numbers for the solutions of exercises 1.1 to 1.5") as answers:
            print(...)
        answers        # the cell's last line: the folded block

    >>> with folded("Numbers") as answers:
    ...     print("1 < 2")
    >>> answers._repr_html_()
    "<details class='answer'><summary>Numbers</summary><pre>1 &lt; 2\\n</pre></details>"
    """

    def __init__(self, summary):
        self.summary, self.text = summary, ""

    def __enter__(self):
        import contextlib
        import io
        self._buffer = io.StringIO()
        self._redirect = contextlib.redirect_stdout(self._buffer)
        self._redirect.__enter__()
        return self

    def __exit__(self, *exc):
        self._redirect.__exit__(*exc)
        self.text = self._buffer.getvalue()
        return False

    def _repr_html_(self):
        from html import escape
        return (f"<details class='answer'><summary>{escape(self.summary)}</summary><pre>{escape(self.text)}</pre>"
                "</details>")

    def __repr__(self):   # a plain-text view (a terminal, nbval's text/plain) says what is folded, not the answers
        return f"({self.summary}: folded)"
