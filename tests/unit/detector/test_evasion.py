"""Agents that adapt (`phantom_assets.detector.evasion`): θ = 0 is the bank as logged, θ = 1 an
agent session with the statistics of a human session of its own engagement stratum, in between a
mix, and the human-like timing costs the agent seconds."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.detector.classifier import fold_classifiers, out_of_fold_scores
from phantom_assets.detector.evasion import evaded_scores
from phantom_assets.detector.features import QUOTE_FEATURES
from phantom_assets.detector.fit import kernel_scores

F_COEF = (0.2, 1.3)


def _sessions(rng: np.random.Generator, n: int, agent: bool) -> np.ndarray:
    x = rng.normal(size=(n, len(QUOTE_FEATURES)))
    x[:, 0] += 2.0 if agent else -1.0  # kernel gap
    x[:, 3] = np.log1p(rng.uniform(1, 3, n) if agent else rng.uniform(5, 30, n))  # dwell (s)
    x[:, 4] = 0.0
    return x


@pytest.fixture(scope="module")
def world():
    rng = np.random.default_rng(0)
    agent_x, human_x = _sessions(rng, 200, True), _sessions(rng, 400, False)
    strata = (rng.integers(0, 4, 200), rng.integers(0, 4, 400))
    folds = (rng.integers(0, 3, 200), rng.integers(0, 3, 400))
    x = np.vstack([human_x, agent_x])
    y = np.r_[np.zeros(400, bool), np.ones(200, bool)]
    models = fold_classifiers(x, y, np.r_[folds[1], folds[0]], 3, QUOTE_FEATURES)
    return agent_x, human_x, strata, folds, models


def test_theta_zero_is_the_logged_bank_and_theta_one_a_human_of_the_same_stratum(world):
    agent_x, human_x, strata, folds, models = world
    evasion = evaded_scores(
        agent_x, human_x, strata, folds[0], models, F_COEF, (0.0, 1.0), np.random.default_rng(1)
    )
    np.testing.assert_allclose(evasion.score[0], out_of_fold_scores(models, agent_x, folds[0]))
    np.testing.assert_allclose(evasion.kernel_score[0], kernel_scores(agent_x, F_COEF))
    # At θ = 1 each agent session's kernel-only f is one of its stratum's humans'.
    human_kernel = kernel_scores(human_x, F_COEF)
    for i in range(agent_x.shape[0]):
        same = human_kernel[strata[1] == strata[0][i]]
        assert np.isclose(evasion.kernel_score[1, i], same).any()
    assert evasion.score[1].mean() < 0.2 < 0.8 < evasion.score[0].mean()


def test_mixing_moves_scores_and_time_monotonically_with_theta(world):
    agent_x, human_x, strata, folds, models = world
    thetas = (0.0, 0.25, 0.5, 0.75, 1.0)
    evasion = evaded_scores(
        agent_x, human_x, strata, folds[0], models, F_COEF, thetas, np.random.default_rng(2)
    )
    assert evasion.thetas == thetas
    assert np.all(np.diff(evasion.kernel_score.mean(axis=1)) < 0)
    assert evasion.time_cost_s[0] == 0.0 and np.all(np.diff(evasion.time_cost_s) > 0)
    assert 3.0 < evasion.time_cost_s[-1] < 30.0  # humans' dwell (5-30 s) minus agents' (1-3 s)


def test_the_kernel_detector_market_scores_both_with_the_kernel_f(world):
    agent_x, human_x, strata, folds, _ = world
    evasion = evaded_scores(
        agent_x, human_x, strata, folds[0], None, F_COEF, (0.0, 0.5), np.random.default_rng(3)
    )
    np.testing.assert_array_equal(evasion.score, evasion.kernel_score)


@pytest.mark.parametrize("thetas", [(), (0.0, 1.5), (-0.1,)])
def test_an_evasion_share_outside_zero_one_is_refused(world, thetas):
    agent_x, human_x, strata, folds, models = world
    with pytest.raises(ValueError, match="evasion shares"):
        evaded_scores(
            agent_x, human_x, strata, folds[0], models, F_COEF, thetas, np.random.default_rng(4)
        )
