"""grader/protocol.py: what the grading process accepts from a sandbox, checked before anything is trusted.

A reply is counted before it is parsed (at most `protocol.MAX_ITEMS` values: replies of millions of tiny values,
sent without end, once piled up parsed in the grading process, 4.8 GB for one file), and texts that must be
strings are checked as such (a deeply nested structure where an exception's type or message belongs once made
str() recurse past Python's limit in the grading process). The same defences graded in a sandbox, with a
flooding file: tests/grader/test_batch.py.
"""

import json

import pytest

from grader import protocol


def test_a_deep_structure_where_text_belongs_is_a_protocol_error():
    deep = []
    for _ in range(990):  # str() of this recursed past Python's limit in the grading process
        deep = [deep]
    for info in ({"type": deep, "message": "m"}, {"type": "T", "message": deep},
                 {"type": "T", "builtin_types": [deep]}):
        with pytest.raises(protocol.ProtocolError, match="texts are not strings"):
            protocol.clean_exception(info)
    with pytest.raises(protocol.ProtocolError):
        protocol.check_reply({"id": 0, "worker_error": deep}, {"id": 0, "calls": [{}]})


def test_a_reply_of_too_many_values_is_refused_before_it_is_parsed():
    n = protocol.MAX_ITEMS  # 3 bytes a value: under the 8 MiB frame limit, each one a list once parsed
    with pytest.raises(protocol.ProtocolError, match=f"more than {protocol.MAX_ITEMS} values"):
        protocol.parse(b"[" + b"[]," * n + b"[]]")
    honest = json.dumps({"id": 0, "results": [{"value": [0.5] * 50000, "args": [[0.5] * 50000]}]}).encode()
    assert len(protocol.parse(honest)["results"][0]["value"]) == 50000  # the largest honest reply still passes
