"""Real English text and a fixed character vocabulary for the two toy models.

The corpus is the prose of Python's own documentation, which every Python
ships in the standard library (`pydoc_data.topics.topics`, a dict of
str -> str), so the models train and run offline on any machine.
`load_text(path)` reads any other UTF-8 file instead.

A `CharVocab` maps each of the most frequent characters to an id; id 0 is
<unk>, shown as U+FFFD, for every character outside the charset:

    >>> vocab = CharVocab("ab\\n")
    >>> vocab.encode("abc")          # 'c' is not in the charset: <unk>
    [1, 2, 0]
    >>> vocab.decode([1, 2, 3, 0])
    'ab\\n\ufffd'
"""

from collections import Counter

UNK = "\ufffd"  # the replacement character stands for every out-of-charset char


def pydoc_text():
    """The stdlib's documentation topics, joined in sorted-key order (deterministic)."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key].strip("\n") for key in sorted(topics)) + "\n"


def load_text(path):
    """Read a UTF-8 text file (any corpus you like to train on)."""
    with open(path, encoding="utf-8") as f:
        return f.read()


def build_charset(text, size=96):
    """The `size - 1` most frequent characters of `text` (ties: by code point) as one string.

    With <unk> at id 0 the vocabulary then has exactly `size` ids.
    """
    if size < 2:
        raise ValueError(f"size is {size}: the vocabulary needs <unk> and at least one character")
    counts = Counter(text)
    counts.pop(UNK, None)
    ranked = sorted(counts, key=lambda ch: (-counts[ch], ch))[: size - 1]
    return "".join(sorted(ranked))  # sorted: ids follow code points, easy to read


class CharVocab:
    """Character <-> id maps: id 0 is <unk>, ids 1..len(charset) follow `charset`."""

    def __init__(self, charset):
        if len(set(charset)) != len(charset):
            raise ValueError("charset has a repeated character")
        if UNK in charset:
            raise ValueError("charset must not contain U+FFFD: it stands for <unk>")
        self.charset = charset
        self.itos = UNK + charset
        self.stoi = {ch: i for i, ch in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def encode(self, text):
        """list[int] ids of `text`; characters outside the charset become 0 (<unk>)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        get = self.stoi.get
        return [get(ch, 0) for ch in text]

    def decode(self, ids):
        """The text of `ids`; an id outside [0, V) raises ValueError naming its position."""
        out = []
        for i, t in enumerate(ids):
            t = int(t)
            if not 0 <= t < len(self.itos):
                raise ValueError(f"ids[{i}] is {t}, outside the vocabulary [0, {len(self.itos)})")
            out.append(self.itos[t])
        return "".join(out)
