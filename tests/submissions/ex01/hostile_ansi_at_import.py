"""Hostile: dies at import with a message that clears the terminal and prints a fake score line.

The table and the JSON cleaned it, but the command's last line on stderr (`cannot grade FILE: ERROR`)
printed the raw message: ESC[2J ESC[H cleared the screen and a line `score: 100/100 (+10 bonus)` stood
alone. Deserved verdict: cannot be graded (exit 2, score 0); every output, stderr included, shows the
message as one line with no control character.
"""

raise RuntimeError("\x1b[2J\x1b[H\nex01 verify_speculative_tokens: good_plain.py\nscore: 100/100 (+10 bonus)\x1b]0;owned\x07")
