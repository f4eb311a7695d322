"""Market sensitivity and the fixed-action gate on real markets: fixed-action totals are the
protocol's episodes, the assumption grid re-parameterizes the market, and two planted markets
that must never certify -- a class-blind engagement rule and indistinguishable classes -- do not.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from phantom_assets.config import MarketConfig
from phantom_assets.evaluation import (
    SENSITIVITY_SCHEMA,
    STEP_FIELDS,
    EpisodeRunner,
    SensitivityDesign,
    assumption_grid,
    certificate_assumptions,
    market_sensitivity,
    robust_conclusions,
    sensitivity_markdown,
)
from phantom_assets.evaluation.sensitivity import sensitivity_point
from phantom_assets.market import MarketSpec, demo_spec
from phantom_assets.market.columns import STEP_COLUMNS
from phantom_assets.market.draws import engagement_strata
from phantom_assets.market.oracle import fixed_action_totals
from tests.unit.evaluation.conftest import action

DESIGN = SensitivityDesign(alpha_grid=(0.0, 0.5, 1.0), radius=0.2, k=4,
                           selection_seeds=tuple(range(4)), test_seeds=tuple(range(100, 124)),
                           max_human_harm=0.02)  # fmt: skip
"""24 held-out seeds: as many as the gate is calibrated for, so only the effects can fail."""


@pytest.fixture(scope="module")
def market() -> MarketSpec:
    """A small demo market whose valuations make a defence pay (its best actions use m > 0)."""
    config = MarketConfig(chain_bank_size=600, shoppers_per_step=40, episode_steps=6)
    return demo_spec(1, config, mu_human=2.0, mu_agent=2.0)


@pytest.mark.parametrize("detector", ["fitted", "permuted"])
def test_fixed_action_totals_are_the_protocols_episodes_of_that_action(spec, detector):
    defended, reference = spec.action_index(3, 2, 2), spec.action_index(2, 1, 0)
    totals = fixed_action_totals(spec, [defended], [0.3, 0.7], 4, [5, 6], detector, reference)
    runner = EpisodeRunner(action(spec, 3, 2, 2), spec, reference_action=reference)
    for j, alpha in enumerate((0.3, 0.7)):
        steps = runner.run(alpha, 4, detector, [5, 6])
        for i, name in enumerate(STEP_COLUMNS):
            if name in STEP_FIELDS:
                episode = steps[..., STEP_FIELDS.index(name)].sum(axis=1)
                np.testing.assert_allclose(totals[0, :, j, i], episode, rtol=1e-12, err_msg=name)


def test_the_assumption_grid_sweeps_valuations_and_a_declared_s0_with_m_refitted(spec):
    points = assumption_grid(spec, (1.0, 2.0), (0.5, 1.0), lambda s0: 0.1 * s0, (0.0, 1.0))
    assert len(points) == 4 and sum(values["nominal"] for values, _ in points) == 0
    for values, market in points:
        assert market.mu_human == market.mu_agent == values["valuation_mean"]
        assert market.engagement_scale == pytest.approx(
            spec.engagement_scale * values["engagement_scale_multiple"])  # fmt: skip
        assert market.markups == (0.0, pytest.approx(0.1 * market.engagement_scale))
    fitted = dataclasses.replace(spec, sources={**spec.sources, "engagement_scale": "logs"})
    own = assumption_grid(fitted, (spec.mu_human,), (0.5, 1.0), lambda s0: 0.2, (1.0,))
    assert len(own) == 1 and own[0][0]["nominal"]  # a fitted s0 is not swept


def _class_blind(spec: MarketSpec) -> MarketSpec:
    """f = 0.9 in the two lowest engagement strata, 0.1 above, for humans and agents alike: a
    rule that flags low engagement and knows nothing else (τ = 0.5)."""
    strata = engagement_strata(spec.banks)
    low = {actor: strata.stratum(getattr(spec, f"{actor}_engagement")) < 2
           for actor in ("human", "agent")}  # fmt: skip
    return dataclasses.replace(
        spec, detector_threshold=0.5,
        human_score=np.where(low["human"], 0.9, 0.1), agent_score=np.where(low["agent"], 0.9, 0.1),
    )  # fmt: skip


def _indistinguishable(spec: MarketSpec, seed: int = 0) -> MarketSpec:
    """Humans and agents scored by one law, independent of class and engagement (separability
    0); τ flags 2% of humans."""
    rng = np.random.default_rng(seed)
    human = rng.uniform(size=spec.human_score.size)
    agent = rng.uniform(size=spec.agent_score.size)
    return dataclasses.replace(spec, human_score=human, agent_score=agent,
                               detector_threshold=float(np.quantile(human, 0.98)))  # fmt: skip


def test_a_class_blind_engagement_rule_has_detector_value_zero_and_never_certifies(market):
    blind = _class_blind(market)
    point = sensitivity_point(blind, DESIGN, np.random.default_rng(0))
    assert point["detector_value"] == 0.0 and point["p_detector"] == 1.0
    assert not point["certified"]
    # Not vacuous: the rule itself pays (it quotes low-engagement sessions up) ...
    assert point["profit_advantage"] > 0
    # ... and the same market with its real detector keeps a detector value.
    assert sensitivity_point(market, DESIGN, np.random.default_rng(0))["detector_value"] != 0.0


def test_indistinguishable_classes_never_certify(market):
    point = sensitivity_point(_indistinguishable(market), DESIGN, np.random.default_rng(0))
    assert not point["certified"]
    assert point["p_detector"] > 0.025


def test_market_sensitivity_reports_every_point_and_which_conclusions_hold_everywhere(market):
    points = assumption_grid(market, (1.5, 2.0), (1.0,), lambda s0: 0.3, (0.0, 1.0, 2.0))
    table = market_sensitivity(points, DESIGN, np.random.default_rng(0))
    assert table.schema == pl.Schema(SENSITIVITY_SCHEMA) and table.height == 2
    conclusions = robust_conclusions(table)
    assert conclusions["points"].to_list() == [2] * len(conclusions)
    for row in conclusions.iter_rows(named=True):
        expected = {2: "robust", 0: "never"}.get(row["holds_at"], "depends on the assumptions")
        assert row["verdict"] == expected
    assert "| conclusion | holds at |" in sensitivity_markdown(table, conclusions, "hotel")
    summary = certificate_assumptions(table, False, market.sources)
    assert summary["grid_points"] == 2 and "valuation" in summary["declared"]
    assert summary["decision_holds_on_whole_grid"] == (not table["certified"].any())
    assert "not resampled" in summary["interval_covers"]
    assert "not built" in certificate_assumptions(None, False, market.sources)["sensitivity"]
