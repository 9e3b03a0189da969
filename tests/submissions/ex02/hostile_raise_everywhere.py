"""Hostile: solves nothing and raises a made-up subclass of ValueError on every input.

Every case that checks bad input wants a ValueError, so this scored 19/100 on ex02 (9 to 19 on the
other exercises with the same trick) without a line of softmax. Deserved verdict: 0 points, status
failed; each validation case says the file raises ValueError where it must not.
"""


class NotTodayError(ValueError):
    pass


def softmax(logits, temperature=1.0):
    raise NotTodayError("no")
