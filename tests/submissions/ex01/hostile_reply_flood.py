"""Hostile: floods the reply channel to exhaust the grading process's memory (the red team's third round).

On its first call it writes, itself, a reply of 3.9 million values (7.8 MB, under the 8 MiB frame limit)
for the case it was asked, then frames of 2.7 million empty lists, without end. Each such frame parses to
about 200 MB in the parent, and while the parent was busy cleaning the first reply, the reader thread piled
them up: the grading process of this one file peaked at 4.8 GB. Deserved verdict: 0 points, status
failed (every case "sent a reply with more than 1000000 values"), the grading process stays small (the
replies are counted before they are parsed, and at most one parsed reply waits), honest files keep
exactly their grades.
"""

import json
import os
import sys


def _frame(message):
    body = json.dumps(message, separators=(",", ":")).encode()
    return str(len(body)).encode() + b"\n" + body


def verify_speculative_tokens(*args):
    request = sys._getframe(1).f_locals["request"]  # the worker's run_request: the id to answer
    fd = int(sys.argv[1])

    def write(data):
        while data:
            data = data[os.write(fd, data):]
    write(_frame({"id": request["id"], "results": [{"value": [0] * 3_900_000}]}))
    flood = b"[" + b"[]," * 2_700_000 + b"[]]"
    flood = str(len(flood)).encode() + b"\n" + flood
    while True:
        write(flood)
