"""The training episodes' (α, K) law: the band around a training α, its two laws, validation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from phantom_assets.config import AgentsConfig
from phantom_assets.market import EpisodeLaw, training_law

AGENTS = AgentsConfig(alpha_grid=(0.0, 0.25, 0.5, 1.0), k_grid=(2, 8), train_alpha_radius=0.3)


@pytest.mark.parametrize(
    ("alpha0", "band"), [(0.5, (0.2, 0.8)), (0.1, (0.0, 0.4)), (1.0, (0.7, 1.0))]
)
def test_the_training_band_is_alpha0_plus_minus_the_radius_clipped_to_0_1(alpha0, band):
    law = training_law(AGENTS, alpha0)
    assert law.band == pytest.approx(band) and law.ks == (2, 8) and law.law == "uniform"


def test_the_uniform_law_covers_its_band_and_every_k_with_equal_probability():
    draws = [
        EpisodeLaw((0.2, 0.8), (2, 8)).draw(np.random.default_rng(seed)) for seed in range(2_000)
    ]
    alphas, ks = np.array([a for a, _ in draws]), np.array([k for _, k in draws])
    assert 0.2 <= alphas.min() < 0.21 and 0.79 < alphas.max() <= 0.8
    assert alphas.mean() == pytest.approx(0.5, abs=0.02) and (ks == 8).mean() == pytest.approx(
        0.5, abs=0.04
    )


def test_the_grid_law_draws_only_the_alpha_grid_points_inside_the_band():
    law = training_law(dataclasses.replace(AGENTS, train_law="grid"), 0.5)
    assert law.grid == (0.25, 0.5)
    rng = np.random.default_rng(0)
    assert {law.draw(rng)[0] for _ in range(200)} == {0.25, 0.5}


def test_radius_zero_trains_at_alpha0_only():
    law = training_law(dataclasses.replace(AGENTS, train_alpha_radius=0.0), 0.5)
    assert law.draw(np.random.default_rng(1))[0] == 0.5


def test_a_law_without_points_or_with_a_bad_band_k_or_name_is_rejected():
    with pytest.raises(ValueError, match="no alpha_grid point"):
        training_law(dataclasses.replace(AGENTS, train_law="grid", train_alpha_radius=0.1), 0.75)
    for band, ks, law in (
        ((0.6, 0.2), (2,), "uniform"),
        ((0.0, 1.0), (0,), "uniform"),
        ((0.0, 1.0), (2,), "beta"),
    ):
        with pytest.raises(ValueError):
            EpisodeLaw(band, ks, law)
    with pytest.raises(ValueError, match="train_law"):
        AgentsConfig(train_law="beta")
