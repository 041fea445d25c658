"""The workload's random inputs: the same seed gives the same values whatever the cores that
draw them, Q8_0 weights as Q8_0 gives them, normal scores."""

import numpy as np
import pytest

from strata_core.run import draws


@pytest.mark.parametrize("draw", ["q8_values", "q8_scales", "standard_normal"])
def test_the_same_seed_gives_the_same_values_on_any_number_of_cores(monkeypatch, draw):
    size = 3 * draws.PIECE_BYTES + 12345  # pieces, and a short last one

    def drawn(cores: int) -> np.ndarray:
        monkeypatch.setattr(draws.os, "cpu_count", lambda: cores)
        return getattr(draws, draw)(np.random.default_rng(11), size)

    one, two, eight = drawn(1), drawn(2), drawn(8)
    assert np.array_equal(one, two) and np.array_equal(one, eight)
    assert not np.array_equal(one, getattr(draws, draw)(np.random.default_rng(12), size))


def test_q8_values_are_what_q8_0_gives():
    values = draws.q8_values(np.random.default_rng(1), 1 << 22)
    assert values.dtype == np.int8 and values.min() == -127 and values.max() == 127
    counts = np.bincount(values.astype(np.int16) + 127)
    assert counts.min() > 0.8 * counts.mean()  # every level, about as often


def test_q8_scales_are_the_levels_of_unit_normal_weights():
    scales = draws.q8_scales(np.random.default_rng(1), 100_000)
    assert scales.dtype == np.float16
    assert set(np.unique(scales)) <= set(draws.SCALE_LEVELS)
    assert len(np.unique(scales)) == len(draws.SCALE_LEVELS)


def test_standard_normal_scores():
    scores = draws.standard_normal(np.random.default_rng(1), (64, 5000))
    assert scores.shape == (64, 5000) and scores.dtype == np.float32
    assert abs(scores.mean()) < 0.01 and abs(scores.std() - 1) < 0.01
