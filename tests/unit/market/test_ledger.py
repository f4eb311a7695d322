"""The agent ledger and the fixed-action gate on planted worlds (docs/method.md#the-agent-ledger):
where valuation does not depend on engagement, engagement pricing and detection are worth nothing
and nothing certifies; where it does and agents are a separable, unengaged class, a perfect
detector wins back what the ledger says; where only a detector can find the agents, the gate
certifies the best defended fixed action -- and not once the agents' scores are the humans' --
and every row keeps the contract."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import polars as pl
import pytest

from phantom_assets.config import MarketConfig
from phantom_assets.evaluation import SensitivityDesign
from phantom_assets.evaluation.sensitivity import sensitivity_point
from phantom_assets.market import MarketSpec, demo_spec
from phantom_assets.market.ledger import (
    EVASION_QUANTITIES,
    LEDGER_QUANTITIES,
    LEDGER_SCHEMA,
    agent_ledger,
    ledger_markdown,
    ledger_sentences,
)
from tests.unit.market.adapting import adapting

SELECTION, HELD_OUT = tuple(range(8)), tuple(range(100, 124))
K = 4
GATE_DESIGN = SensitivityDesign((0.0, 0.5, 1.0), 0.2, K, SELECTION, HELD_OUT, 0.02)


@functools.cache
def base() -> MarketSpec:
    # 16 steps of 60 shoppers per episode: at 8 the strong world's perfect-detector interval
    # still covered 0 against a fully refined undefended response (the effect is ~4% of profit).
    config = MarketConfig(chain_bank_size=1_500, shoppers_per_step=60, episode_steps=16)
    return demo_spec(1, config)


@functools.cache
def flat_world() -> MarketSpec:
    """Valuations that ignore engagement (β = 0) and little quote noise."""
    return dataclasses.replace(base(), mu_human=1.45, beta_human=0.0, quote_noise=0.02)


@functools.cache
def strong_world() -> MarketSpec:
    """A steep engagement slope, and agents that reach the product without engaging at all."""
    spec = base()
    return dataclasses.replace(
        spec,
        beta_human=1.2,
        quote_noise=0.02,
        engagement_scale=10.0,
        valuation_scale=10.0,
        agent_engagement=np.zeros(spec.agent_engagement.size),
    )


@functools.cache
def detectable_world() -> MarketSpec:
    """Agents that reach the quote as engaged as humans (engagement cannot find them) but browse
    unlike them (the detector flags every agent session and 2% of humans' sessions), and
    valuations tight around their engagement's (σ = 0.05)."""
    spec = base()
    rng = np.random.default_rng(0)
    return dataclasses.replace(
        spec,
        sigma_human=0.05,
        agent_engagement=rng.choice(spec.human_engagement, spec.agent_engagement.size),
        agent_score=np.full(spec.agent_score.size, 0.999),
    )


@functools.cache
def ledger(world: str) -> pl.DataFrame:
    spec = {"flat": flat_world, "strong": strong_world}[world]()
    return agent_ledger(spec, [0.0, 0.5], [K], SELECTION, HELD_OUT)


def row(table: pl.DataFrame, alpha: float, quantity: str) -> dict:
    return table.filter(pl.col("alpha") == alpha, pl.col("quantity") == quantity).row(0, named=True)


def covers_zero(r: dict) -> bool:
    return r["ci_low"] <= 0.0 <= r["ci_high"] or (r["ci_low"] == r["ci_high"] == r["value"] == 0)


def test_without_an_engagement_slope_personalization_and_detection_are_worth_nothing():
    table = ledger("flat")
    assert covers_zero(row(table, 0.0, "personalization_value"))
    for quantity in ("perfect_detector", "fitted_detector", "beyond_engagement"):
        assert covers_zero(row(table, 0.5, quantity)), quantity


def test_without_an_engagement_slope_the_fixed_action_gate_certifies_nothing():
    assert not sensitivity_point(flat_world(), GATE_DESIGN, np.random.default_rng(0))["certified"]


def test_where_only_a_detector_finds_agents_the_fixed_action_gate_certifies_the_defence():
    point = sensitivity_point(detectable_world(), GATE_DESIGN, np.random.default_rng(0))
    assert point["certified"], point
    assert point["profit_advantage"] > 0 and point["detector_value"] > 0
    assert max(point["p_profit"], point["p_detector"], point["p_harm"]) <= 0.025


def test_agents_that_mimic_humans_within_the_declared_band_leave_the_gate_nothing_to_certify():
    # The detectable world (certified above), its agents adapting fully (θ = 1) inside the
    # declared band: the gate's comparisons are the worst case over the band, at θ = 1, where
    # neither the detector value nor the advantage it bought is shown above 0.
    point = sensitivity_point(
        adapting(detectable_world(), (0.0, 1.0), band=1.0), GATE_DESIGN, np.random.default_rng(0)
    )
    assert not point["certified"], point
    assert min(point["p_detector"], point["p_profit"]) > 0.025, point


def test_the_same_world_with_agents_scored_like_humans_certifies_nothing():
    # The class-blind twin: the agents' scores drawn from the humans', so a flag says nothing
    # about the class and only engagement is left.
    world = detectable_world()
    blind = np.random.default_rng(1).choice(world.human_score, world.agent_score.size)
    point = sensitivity_point(
        dataclasses.replace(world, agent_score=blind), GATE_DESIGN, np.random.default_rng(0)
    )
    assert not point["certified"], point


def test_with_a_steep_slope_and_unengaged_agents_a_perfect_detector_wins_back_money():
    table = ledger("strong")
    personalization = row(table, 0.0, "personalization_value")
    take, perfect = row(table, 0.5, "agents_take"), row(table, 0.5, "perfect_detector")
    assert personalization["ci_low"] > 0 and take["ci_low"] > 0 and perfect["ci_low"] > 0
    # A perfect detector cannot win back more than the agents take (their need stays hidden).
    assert perfect["value"] <= take["value"]
    assert 0 < perfect["share_of_profit"] < personalization["share_of_profit"] + 1e-9


def test_the_ledger_keeps_its_contract_and_reads_in_sentences():
    table = ledger("strong")
    assert table.schema == pl.Schema(LEDGER_SCHEMA)
    at_zero = table.filter(pl.col("alpha") == 0.0)["quantity"].to_list()
    assert at_zero == ["personalization_value"]
    logged = table.filter(pl.col("alpha") == 0.5, pl.col("theta") == 0.0)
    assert logged["quantity"].to_list() == list(LEDGER_QUANTITIES[1:])
    assert table.filter(pl.col("theta") > 0).is_empty()  # this spec swept no evasion
    assert (table["n"] == len(HELD_OUT)).all()
    money = table.filter(pl.col("quantity").is_in(["agents_take", "perfect_detector"]))
    scale = row(table, 0.0, "personalization_value")
    assert money["share_of_profit"].to_list() == pytest.approx(
        (money["value"] / (scale["value"] / scale["share_of_profit"])).to_list()
    )
    sentences = ledger_sentences(table.to_dicts(), K)
    assert sentences[0].startswith("engagement pricing is worth") and "α = 0.5" in sentences[1]
    assert ledger_markdown(table, K).count("\n") == table.height + 2


def test_the_kernel_only_detector_is_the_fitted_one_when_the_market_quotes_with_it():
    table = ledger("strong")  # no separate kernel-only scores: the same detector
    for fitted, kernel in (
        ("fitted_detector", "kernel_only_detector"),
        ("fitted_share", "kernel_only_share"),
    ):
        assert row(table, 0.5, kernel)["value"] == pytest.approx(row(table, 0.5, fitted)["value"])


def test_where_only_detector_v2_finds_agents_the_ledger_credits_it_and_not_the_kernel_only_one():
    # v2 flags every agent session; the kernel-only f of agents is drawn from the humans': its
    # own τ flags as many agents as humans, so it can win back little beyond a blind rule.
    world = detectable_world()
    blind = np.random.default_rng(1).choice(world.human_score, world.agent_score.size)
    spec = dataclasses.replace(world, detector="v2", agent_kernel_score=blind)
    table = agent_ledger(spec, [0.5], [K], SELECTION, HELD_OUT)
    fitted, kernel = row(table, 0.5, "fitted_detector"), row(table, 0.5, "kernel_only_detector")
    assert fitted["ci_low"] > 0 and fitted["value"] > kernel["value"]
    assert row(table, 0.5, "fitted_share")["value"] > row(table, 0.5, "kernel_only_share")["value"]


def test_agents_that_mimic_humans_fully_leave_the_detector_no_value_beyond_engagement():
    # The detectable world's detector is worth money; agents that adapt with θ = 1 score like a
    # human of their engagement, so what it wins beyond engagement must vanish; θ = 0.5 sits
    # between (scores mixed halfway still flag many agents: a mixed logit stays high).
    spec = adapting(detectable_world(), (0.0, 0.5, 1.0), band=0.5)
    table = agent_ledger(spec, [0.5], [K], SELECTION, HELD_OUT)
    logged = row(table, 0.5, "beyond_engagement")
    adapted = table.filter(pl.col("quantity") == "adapted_beyond_engagement")
    mimic = adapted.filter(pl.col("theta") == 1.0).row(0, named=True)
    assert logged["ci_low"] > 0 and covers_zero(mimic), (logged, mimic)
    assert abs(mimic["value"]) < 0.2 * logged["value"]
    flagged = table.filter(pl.col("quantity") == "adapted_agents_flagged").sort("theta")
    assert flagged["value"].to_list()[-1] <= 0.1  # τ flags agents at θ = 1 about as humans
    assert set(table.filter(pl.col("theta") > 0)["quantity"]) == set(EVASION_QUANTITIES)
    sentence = ledger_sentences(table.to_dicts(), K, evasion_band=0.5)[-1]
    assert "θ = 0.5" in sentence and "mimic humans fully" in sentence
