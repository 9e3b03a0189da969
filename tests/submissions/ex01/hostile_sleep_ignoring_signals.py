"""Hostile: ignores every signal it can and sleeps in every case (the red team's held a grading slot for 183 s:
the wall-clock cap was 3 x the CPU budget + 2 s, and a sleeping file uses no CPU).

Deserved verdict: 0, stopped within seconds per case: waiting with no thread running is the file's own doing
(session.BLOCKED), whatever the machine's load, and the sandbox is killed with SIGKILL, which no process ignores.
"""
import signal
import time

for _name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGALRM", "SIGUSR1", "SIGUSR2", "SIGXCPU"):
    try:
        signal.signal(getattr(signal, _name), signal.SIG_IGN)
    except (AttributeError, OSError, ValueError):
        pass


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    while True:
        time.sleep(1000)
