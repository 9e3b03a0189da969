"""The plain data that crosses the sandbox boundary, and its validation in the parent.

Requests go in as JSON (see `worker.py` for their shape). Replies come back
as JSON from a process the submission controls, so they are read as hostile:
a reply must be one frame no larger than MAX_REPLY bytes (8 MiB: the largest
honest reply, 50000 floats sent back twice, is about 2 MiB) holding at most
MAX_ITEMS values (counted on its bytes before it is parsed: 8 MiB of `[],` would
be 2.8 million lists, 200 MB in the parent), valid JSON without
duplicate keys, nested at most MAX_DEPTH levels, and shaped as the request
asked; every text in it (an exception's type, message, line) must be a JSON
string, never a structure to turn into one. Values are then made safe to judge:

- ints stay ints and bools stay bools (JSON keeps them apart);
- an int beyond +-2**63 becomes a `Foreign` ("an int with 401 digits"), so no
  judge ever overflows converting it to a float;
- NaN and infinities stay floats (every judge rejects them by name);
- {"$object": "X"} (what the worker sends for a non-plain value) becomes a `Foreign`.

Anything else is a `ProtocolError`: that case fails with its message, the
parent never crashes.

    >>> clean_value([1, True, 10 ** 400, {"$object": "AlwaysEqual"}])
    [1, True, Foreign('an int with 401 digits'), Foreign('an object of type AlwaysEqual')]
"""

import json

from .worker import long_int

MAX_REPLY = 8 * 1024 ** 2
MAX_DEPTH = 40
MAX_ITEMS = 1_000_000  # the largest honest reply holds about 100000
# All the replies of one run together: the grading process keeps every case's cleaned values until it judges,
# and each reply's limit alone let one file make it hold 2.1 GB (25 cases of a million values). Honest: < 200000.
MAX_RUN_ITEMS = 3_000_000
MAX_STR = 2000
INT_LIMIT = 2 ** 63


class ProtocolError(Exception):
    """A reply that is not what the protocol allows (said in the failed case's message)."""


class Foreign:
    """A value the judges must not compute with; `str()` says what it was."""

    def __init__(self, description):
        self.description = description

    def __repr__(self):
        return f"Foreign({self.description!r})"

    def __str__(self):
        return self.description


def clean_str(text):
    """`text` with every lone surrogate (a "\\ud800" escape in a reply: no UTF-8 text holds one) as U+FFFD, so
    that every report, table or JSON document that quotes it stays valid text.

    >>> clean_str("ok"), clean_str(json.loads('"a\\\\ud800"'))
    ('ok', 'a\ufffd')
    """
    if text.isascii():
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ProtocolError("a JSON object with duplicate keys")
    return dict(pairs)


def parse(body):
    """JSON bytes -> Python data; ProtocolError for anything malformed or too big."""
    if len(body) > MAX_REPLY:
        raise ProtocolError(f"a reply of {len(body)} bytes (limit {MAX_REPLY})")
    if body.count(b",") + body.count(b"[") + body.count(b"{") > MAX_ITEMS:  # an upper bound on its values
        raise ProtocolError(f"a reply with more than {MAX_ITEMS} values")
    try:
        return json.loads(body, object_pairs_hook=_no_duplicates)
    except ProtocolError:
        raise
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:  # ints over 4300 digits land here too
        raise ProtocolError(f"a reply that is not valid JSON ({type(exc).__name__})") from None
    except MemoryError:
        raise ProtocolError("a reply too large to read") from None


def clean_value(value, depth=0, budget=None):
    """A returned value made safe to judge (see the module docstring)."""
    budget = budget if budget is not None else [MAX_ITEMS]
    budget[0] -= 1
    if budget[0] < 0:
        raise ProtocolError(f"a value with more than {MAX_ITEMS} items")
    if depth > MAX_DEPTH:
        raise ProtocolError(f"a value nested more than {MAX_DEPTH} levels")
    kind = type(value)
    if kind is int and not -INT_LIMIT <= value < INT_LIMIT:  # str() of one over 4,300 digits would raise
        return Foreign(long_int(value) or f"an int with {len(str(abs(value)))} digits")
    if value is None or kind in (bool, int, float):
        return value
    if kind is str:
        return clean_str(value if len(value) <= MAX_STR else value[:MAX_STR] + "...")
    if kind is list:
        return [clean_value(v, depth + 1, budget) for v in value]
    if kind is dict:
        if list(value) == ["$object"] and type(value["$object"]) is str:
            name = value["$object"][:80]
            return Foreign(name if name.startswith(("a ", "an int ", "dict ")) else f"an object of type {name}")
        return {clean_str(k[:MAX_STR]): clean_value(v, depth + 1, budget) for k, v in value.items()}
    raise ProtocolError(f"a value of JSON type {kind.__name__}")


def _text(value, limit):
    """A JSON string, cut at `limit`; any other JSON value is refused (str() of a deep list would recurse)."""
    if type(value) is not str:
        raise ProtocolError("an exception report whose texts are not strings")
    return clean_str(value[:limit])


def clean_exception(info):
    if type(info) is not dict:
        raise ProtocolError("an exception report that is not an object")
    out = {"type": _text(info.get("type", "?"), 100), "message": _text(info.get("message", ""), MAX_STR)}
    builtin = info.get("builtin_types", [])
    out["builtin_types"] = [_text(t, 100) for t in builtin[:50]] if type(builtin) is list else []
    if type(info.get("line")) is int and type(info.get("text", "")) is str:
        out.update(line=info["line"], text=info.get("text", "")[:200])
    return out


def clean_notes(notes):
    """The worker's notes on loading, validated: {} or {"stopped_at": cell number, "error": an exception report}
    (a notebook whose run stopped at a cell that raised; see worker.run_notebook). Anything else is {}."""
    if type(notes) is not dict or type(notes.get("stopped_at")) is not int or not 0 < notes["stopped_at"] < 10 ** 6:
        return {}
    try:
        return {"stopped_at": notes["stopped_at"], "error": clean_exception(notes.get("error"))}
    except ProtocolError:
        return {}


def check_reply(reply, request, total=None):
    """Validate a decoded reply against its request; return {"results": [...]} or a worker error.

    `total`: a one-element list, the values the run's replies may still hold (MAX_RUN_ITEMS in all).
    """
    if type(reply) is not dict or reply.get("id") != request["id"] or type(reply.get("id")) is not int:
        raise ProtocolError("a reply that does not answer the request it was sent")
    if "too_large" in reply:
        raise ProtocolError("a result too large to send back")
    if "worker_error" in reply:
        return {"worker_error": _text(reply["worker_error"], MAX_STR)}
    results = reply.get("results")
    if type(results) is not list or not 0 < len(results) <= len(request["calls"]):
        raise ProtocolError(f"{len(request['calls'])} calls but a reply with no results or more")
    budget = [MAX_ITEMS]
    checked = []
    for entry in results:
        if type(entry) is not dict or len(set(entry) & {"value", "raised", "unconvertible"}) != 1:
            raise ProtocolError("a result that is neither a value nor an exception")
        if "value" in entry:
            item = {"value": clean_value(entry["value"], 0, budget)}
            if "args" in entry:
                item["args"] = clean_value(entry["args"], 0, budget)
            if entry.get("tuple") is True:   # sent as a list: a tuple, said so in messages (judge.value_judge)
                item["tuple"] = True
        elif "raised" in entry:
            item = {"raised": clean_exception(entry["raised"])}
        else:
            item = {"unconvertible": clean_exception(entry["unconvertible"])}
        checked.append(item)
    if len(checked) < len(request["calls"]) and "value" in checked[-1]:
        raise ProtocolError(f"{len(request['calls'])} calls but only {len(checked)} results")
    if total is not None:
        total[0] -= MAX_ITEMS - budget[0]
        if total[0] < 0:
            raise ProtocolError(f"replies holding more than {MAX_RUN_ITEMS} values in all (this case and the rest "
                                "are not judged)")
    return {"results": checked}
