"""Hostile: answers and exceptions the worker cannot turn into JSON text, chosen by the input's length.

Each kind once broke the worker's reply (red team 5): an int of more than 4,300 digits (json.dumps
refuses it; also held in a NumPy-looking scalar), an exception class whose `__name__` is not a str
(a metaclass), an exception whose str() returns a str subclass that slices to a dict, and one whose
class `__module__` raises when compared. The worker died (the case said "the worker exited ...: a crash",
and the sandbox had to be started again) or the reply was refused as a protocol error. Each case must
now fail with a message that says what came back, the worker living on; the file scores 0.
"""


class _Meta(type):
    __name__ = property(lambda cls: {"not": "a name"})


class Odd(ValueError, metaclass=_Meta):
    pass


class _Slices(str):
    def __getitem__(self, index):
        return {"$object": "a forged description"}


class Sly(ValueError):
    def __str__(self):
        return _Slices("sly")


class _Raises:
    def __eq__(self, other):
        raise RuntimeError("no comparing me")

    __hash__ = object.__hash__


class Unnamed(ValueError):
    pass


Unnamed.__module__ = _Raises()


class item:  # noqa: N801 (looks like a NumPy scalar to the worker)
    __module__ = "numpy"

    def item(self):
        return 10 ** 5000


def softmax(logits, temperature=1.0):
    kind = len(logits) % 4
    if kind == 0:
        return [item() if i % 2 == 0 else 10 ** 5000 for i in range(len(logits))]
    if kind == 1:
        raise Odd("odd")
    if kind == 2:
        raise Sly()
    raise Unnamed("unnamed")
