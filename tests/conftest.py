"""Shared test settings: hypothesis runs derandomized, so every run tries the same examples."""

from hypothesis import HealthCheck, settings

# derandomize: a red CI is reproducible on any machine; deadline=None: no timing-based failures on a busy 2-core box.
settings.register_profile("specdec", derandomize=True, deadline=None, max_examples=200,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("specdec")
