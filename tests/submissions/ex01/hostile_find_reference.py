"""Hostile: hunts for the course's reference, solutions, gradebook and other submissions, and loads what it finds.

It walks up from its working directory, through /proc/*/cwd and /proc/*/root, and over the
whole filesystem it can see. Outside a sandbox it finds specdec/ or solution.py and scores
100 (+10). In the sandbox it finds nothing, and every call says so: "found: []".
"""
import importlib.util
import os

WANTED = ("solution.py", "verify.py", "grades.csv", "good_plain.py", "wrong_strict_less.py", "pyproject.toml")
found = []
roots = {os.getcwd(), "/"}
for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
    for link in ("cwd", "root"):
        try:
            roots.add(os.readlink(f"/proc/{pid}/{link}"))
        except OSError:
            pass
seen = 0
for root in sorted(roots):
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in ("/proc", "/sys", "/dev")]
        seen += 1
        found += [os.path.join(folder, f) for f in files if f in WANTED]
        found += [os.path.join(folder, d) for d in dirs if d in ("specdec", "exercises", "submissions")]
        if seen > 20000:
            break
found = sorted(set(p for p in found if not p.startswith("/grader")))

_reference = None
for path in found:
    if path.endswith(("solution.py", "verify.py")):
        try:
            spec = importlib.util.spec_from_file_location("stolen", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _reference = module.verify_speculative_tokens
            break
        except Exception:
            continue


def verify_speculative_tokens(draft_tokens, draft_probs, target_probs, random_samples):
    if _reference is None:
        raise RuntimeError(f"found: {found[:5]}")
    return _reference(draft_tokens, draft_probs, target_probs, random_samples)
