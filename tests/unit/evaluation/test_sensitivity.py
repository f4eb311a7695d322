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
from phantom_assets.market.oracle import action_totals, fixed_action_totals
from tests.unit.evaluation.conftest import action

DESIGN = SensitivityDesign(
    alpha_grid=(0.0, 0.5, 1.0),
    radius=0.2,
    k=4,
    selection_seeds=tuple(range(4)),
    test_seeds=tuple(range(100, 124)),
    max_human_harm=0.02,
)
"""24 held-out seeds: as many as the gate is calibrated for, so only the effects can fail."""


@pytest.fixture(scope="module")
def market() -> MarketSpec:
    """A small demo market whose demand (revealed preference: valuations rise with engagement)
    makes a defence pay: agents carry their principals' valuations but engage little."""
    config = MarketConfig(chain_bank_size=600, shoppers_per_step=40, episode_steps=6)
    return demo_spec(1, config)


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


def test_the_assumption_grid_moves_one_declared_term_at_a_time(spec):
    config = MarketConfig(
        sensitivity_cost_shares=(0.3,),
        sensitivity_price_caps=(3.0,),
        sensitivity_agent_valuations=("human_unengaged",),
        sensitivity_in_market=(0.25,),
        sensitivity_engagement_scales=(2.0,),
    )
    # The demo spec declares its demand (revealed preference) and s0: both are swept.
    points = assumption_grid(spec, config, lambda s0: 0.1 * s0, beta_interval=(0.1, 0.9))
    terms = [values["term"] for values, _ in points]
    assert terms == [
        "nominal",
        "cost_share",
        "price_cap",
        "agent_valuation",
        "in_market",
        "engagement_scale",
    ]
    assert [values["nominal"] for values, _ in points] == [True] + [False] * 5
    for values, market in points:
        changed = {
            name
            for name in (
                "cost_share",
                "price_cap",
                "agent_valuation",
                "in_market",
                "engagement_scale",
            )
            if getattr(market, name) != getattr(spec, name)
        }
        assert changed == ({values["term"]} if values["term"] != "nominal" else set())
    scale = points[-1][1]
    assert scale.engagement_scale == pytest.approx(2.0 * spec.engagement_scale)
    assert scale.store_markup == pytest.approx(0.1 * scale.engagement_scale)
    share = points[4][1]
    assert np.all(share.demand_replicates[:, 3] == 0.25) or share.replicates == 0
    # A demand from the logs: its slope at the ends of its interval instead of the share.
    fitted = dataclasses.replace(
        spec,
        sources={
            **spec.sources,
            "valuation": "logs",
            "in_market": "logs",
            "engagement_scale": "logs",
        },
    )
    own = assumption_grid(fitted, config, lambda s0: 0.2, beta_interval=(0.1, 0.9))
    assert [v["term"] for v, _ in own][-2:] == ["beta_human", "beta_human"]
    assert [m.beta_human for _, m in own[-2:]] == [0.1, 0.9]


def _class_blind(spec: MarketSpec) -> MarketSpec:
    """f = 0.9 at the two lowest engagement levels, 0.1 above, for humans and agents alike: a
    rule that flags low engagement and knows nothing else (τ = 0.5)."""
    levels = np.unique(np.concatenate([spec.human_engagement, spec.agent_engagement]))
    low = {actor: getattr(spec, f"{actor}_engagement") < levels[2] for actor in ("human", "agent")}
    return dataclasses.replace(
        spec,
        detector_threshold=0.5,
        human_score=np.where(low["human"], 0.9, 0.1),
        agent_score=np.where(low["agent"], 0.9, 0.1),
    )


def _indistinguishable(spec: MarketSpec, seed: int = 0) -> MarketSpec:
    """Humans and agents scored by one law, independent of class and engagement (separability
    0); τ flags 2% of humans."""
    rng = np.random.default_rng(seed)
    human = rng.uniform(size=spec.human_score.size)
    agent = rng.uniform(size=spec.agent_score.size)
    return dataclasses.replace(
        spec,
        human_score=human,
        agent_score=agent,
        detector_threshold=float(np.quantile(human, 0.98)),
    )


def test_a_class_blind_engagement_rule_has_detector_value_zero_and_never_certifies(market):
    blind = _class_blind(market)
    point = sensitivity_point(blind, DESIGN, np.random.default_rng(0))
    assert point["detector_value"] == 0.0 and point["p_detector"] == 1.0
    assert not point["certified"]
    # Not vacuous: the rule moves quotes (a strong δ changes profit on every seed) while the
    # ablation cannot tell its f from f permuted within engagement strata ...
    defended = (1.0, blind.store_markup, max(blind.detector_strengths))
    totals = {
        detector: action_totals(
            blind, [defended, (*defended[:2], 0.0)], [0.5], 4, DESIGN.test_seeds, detector
        )[..., 0, STEP_COLUMNS.index("profit")]
        for detector in ("fitted", "permuted")
    }
    np.testing.assert_array_equal(totals["fitted"][0], totals["permuted"][0])
    assert np.all(totals["fitted"][0] != totals["fitted"][1])
    # ... and the same market with its real detector keeps a detector value.
    assert sensitivity_point(market, DESIGN, np.random.default_rng(0))["detector_value"] != 0.0


def test_indistinguishable_classes_never_certify(market):
    point = sensitivity_point(_indistinguishable(market), DESIGN, np.random.default_rng(0))
    assert not point["certified"]
    assert point["p_detector"] > 0.025


def test_market_sensitivity_reports_every_point_and_which_conclusions_hold_everywhere(market):
    config = MarketConfig(
        sensitivity_cost_shares=(0.3,),
        sensitivity_price_caps=(),
        sensitivity_agent_valuations=(),
        sensitivity_in_market=(),
        sensitivity_engagement_scales=(),
    )
    points = assumption_grid(market, config, lambda s0: 0.3)
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
    assert "replicate of the store's sample" in summary["interval_covers"]
    assert "not built" in certificate_assumptions(None, False, market.sources)["sensitivity"]
