"""specdec.typical.typical_verify (typical acceptance): its parameters eps and delta are checked and named.

Wrong types are TypeError, wrong values ValueError, each naming the argument (eps < 0 would accept every draft).
"""

import pytest

from specdec.typical import typical_verify


@pytest.mark.parametrize("kwargs, error, match", [
    ({"eps": "0.09"}, TypeError, "eps must be a number >= 0, got str"),
    ({"delta": None}, TypeError, "delta must be a number >= 0, got NoneType"),
    ({"eps": -0.1}, ValueError, "eps must be a number >= 0, got -0.1"),
    ({"delta": float("nan")}, ValueError, "delta must be a number >= 0, got nan"),
])
def test_typical_parameters_wrong_type_is_type_error(kwargs, error, match):
    with pytest.raises(error, match=match):
        typical_verify([0], [[0.5, 0.5]], **kwargs)
