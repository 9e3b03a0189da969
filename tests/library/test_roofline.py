"""specdec.generation.roofline: reading the caches, the arithmetic of intensity and bandwidth, the shape of layer_times.

Timings are never asserted (only that they exist and are positive); the cache reader is checked
against a fake /sys tree written by the test, and the arithmetic by hand.
"""

import numpy as np
import pytest

from specdec.generation import roofline


def test_cache_sizes_read_sys(tmp_path, monkeypatch):
    for i, (level, kind, size) in enumerate([("1", "Data", "48K"), ("2", "Unified", "1024K"),
                                             ("3", "Unified", "32768K"), ("3", "Unified", "garbage")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(level + "\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
    monkeypatch.setattr(roofline.glob, "glob", lambda pattern: sorted(str(p) for p in tmp_path.iterdir()))
    # 48K = 48 * 1024; the unreadable fourth entry is skipped, not a crash
    assert roofline.cache_sizes() == [(1, "Data", 49152), (2, "Unified", 1048576), (3, "Unified", 33554432)]
    assert roofline.last_level_cache() == 33554432


def test_no_sys_falls_back_to_sysconf_or_nothing(monkeypatch):
    monkeypatch.setattr(roofline.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(roofline.os, "sysconf", lambda name: {"SC_LEVEL3_CACHE_SIZE": 8 * 2 ** 20}.get(name, 0))
    assert roofline.cache_sizes() == [(3, "Unified", 8 * 2 ** 20)]
    monkeypatch.setattr(roofline.os, "sysconf", lambda name: (_ for _ in ()).throw(ValueError(name)))
    assert roofline.cache_sizes() == [] and roofline.last_level_cache() is None


def test_intensity_and_bandwidth_by_hand():
    assert roofline.intensity(1) == 0.5 and roofline.intensity(16) == 8.0      # 2 m flops / 4 bytes
    assert roofline.intensity(4, itemsize=2) == 4.0                            # 16-bit weights: twice as dense
    # 256 MB read in 10 ms: 2^28 bytes / 0.01 s = 26.8 GB/s
    assert roofline.bandwidth({(256, 1): 0.01, (1, 1): 1.0}, [1, 256]) == pytest.approx(2 ** 28 / 0.01 / 1e9)


def test_layer_times_covers_every_size_and_row_count():
    times = roofline.layer_times([0.25, 0.5], [1, 3], width=64, repeats=2, min_seconds=1e-4)
    assert sorted(times) == [(0.25, 1), (0.25, 3), (0.5, 1), (0.5, 3)] and min(times.values()) > 0
    assert roofline._weights(0.5, 64).nbytes == 2 ** 19                        # [64, 2048] float32
    rates = roofline.product_rates(n=64, repeats=3)
    assert rates.shape == (3,) and (rates > 0).all()


def test_rows_ratio_pairs_the_rounds():
    # round j of every row count is timed together: a round twice as slow for both leaves the ratio alone
    samples = {(4, 1): np.array([1.0, 2.0, 1.0, 2.0]), (4, 2): np.array([3.0, 6.0, 3.0, 6.0]),
               (4, 3): np.array([1.0, 2.0, 1.0, 2.0])}
    assert roofline.rows_ratio(samples, 4, 2) == pytest.approx((3.0, 3.0, 3.0))
    assert roofline.rows_ratio(samples, 4, 3, base=2) == pytest.approx((1 / 3,) * 3)
    real = roofline.layer_time_samples([0.25], [1, 2], width=64, repeats=3, min_seconds=1e-4)
    assert sorted(real) == [(0.25, 1), (0.25, 2)] and all(v.shape == (3,) and (v > 0).all() for v in real.values())
