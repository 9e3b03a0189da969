"""Hostile: reads the sandbox's mount table, where every bind names its source on the host, and leaks it.

Every call raises an error whose message is what it found about /grader and /work. The worker was
once bound from the course's own folder, so its location showed; the worker now comes in as data,
and the submission from a private copy: neither the course package nor the class folder shows.
(The interpreter's and the system libraries' paths still do: they are bound where they are.)
"""
with open("/proc/self/mountinfo") as f:
    FOUND = [" ".join(line.split()[3:5]) for line in f if line.split()[4].startswith(("/grader", "/work"))]


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    raise RuntimeError("leak: " + " | ".join(FOUND))
