"""Promotion gate v2: selection seeds choose, held-out seeds test the agent-aware defence.

Fixtures have the real shape (24 learnable candidates, 2 heuristics and the static engine × 3 α0
× 8 selection + 8 held-out episode seeds × training seeds × both detectors), built by the
calibration study's own table builder, so a many-to-many join or a selection on the test seeds
shows up here.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

from phantom_assets.audit import holm_adjust, per_seed, rank_candidates, select_candidates
from phantom_assets.audit.gate import REPORTED_ALPHA0
from phantom_assets.audit.records import GATE_CONTRACT_KEYS
from phantom_assets.calibration.gate import HARM_BOUND, STATIC
from tests.unit.audit.conftest import PASSED, WINNER, defence, gate_table, plant, run_gate


def test_gate_certifies_a_planted_agent_aware_defence_on_held_out_seeds():
    decision = run_gate(defence(gate_table(train_seeds=3)))
    assert decision.certified, decision.reasons
    assert decision.candidate == WINNER and decision.static == STATIC
    assert decision.n_pairs == 8 == len(decision.test_seeds)
    assert set(decision.selection_seeds).isdisjoint(decision.test_seeds)
    assert decision.profit_vs_static.ci_low > 0 and decision.detector_value.ci_low > 0
    assert decision.human_harm.within and decision.p_value <= 0.025
    assert decision.reasons[0].startswith("certified: all blocking checks passed")
    roles = [c["role"] for c in decision.to_dict()["comparisons"]]
    assert roles == ["profit vs static engine", "detector value"]


def test_gate_refuses_a_defence_without_detection():
    # Indistinguishable humans and agents: permuted f quotes exactly like fitted f, so the
    # detector value is 0 on every seed however much the defence raises profit (DESIGN §8).
    stress = plant(gate_table(), WINNER, profit=10.0)
    fitted = stress.filter(pl.col("detector") == "fitted")
    stress = pl.concat([fitted, fitted.with_columns(detector=pl.lit("permuted"))])
    decision = run_gate(stress)
    assert not decision.certified
    assert decision.profit_vs_static.ci_low > 0
    assert decision.detector_value.mean_diff == 0.0 == decision.detector_value.ci_low
    assert [r for r in decision.reasons if "detector value" in r] == [
        "not certified: detector value (fitted - permuted f): the 95% CI [0, 0] (mean 0, "
        "n = 8 seeds, one-sided p = 1) does not lie above zero"
    ]


def test_gate_refuses_a_defence_that_harms_humans_beyond_the_bound():
    # Harmless on the selection seeds (so it is selected), harmful on the held-out seeds.
    decision = run_gate(plant(defence(gate_table()), WINNER, harm=0.1, split="test"))
    assert not decision.certified and decision.candidate == WINNER
    assert decision.human_harm.upper > HARM_BOUND
    assert decision.profit_vs_static.ci_low > 0 and decision.detector_value.ci_low > 0
    (reason,) = decision.reasons
    harm = decision.human_harm
    assert reason.startswith("not certified: human harm: held-out mean ")
    assert f"upper bound {harm.upper:.4g} vs the bound 0.05 (n = 8 seeds)" in reason


def test_holm_combines_the_three_p_values_of_each_tested_candidate():
    stress = plant(defence(gate_table()), "ppo-robust-a100", profit=4.0, value=1.5)
    decision = run_gate(stress, n_candidates=3)
    assert decision.certified and decision.candidate in {WINNER, "ppo-robust-a100"}
    table = decision.candidates
    assert len(table) == 3
    for row in table:
        assert row["p_value"] == max(row["p_profit"], row["p_detector"], row["p_harm"])
    assert [r["p_holm"] for r in table] == pytest.approx(
        list(holm_adjust([r["p_value"] for r in table]))
    )


def test_holm_over_more_candidates_than_eight_seeds_can_afford_refuses_even_a_clear_winner():
    # 8 held-out seeds: the smallest exact sign-flip p is 1/256; Holm over 8 candidates makes it
    # 8/256 = 0.031 > 0.025, so the gate cannot certify, and says why.
    decision = run_gate(plant(gate_table(), WINNER, profit=30.0, value=10.0), n_candidates=8)
    assert not decision.certified and decision.candidate == WINNER
    assert decision.reasons == ("not certified: Holm-adjusted p = 0.0312 exceeds 0.025",)


def test_gate_selects_on_selection_seeds_only():
    # The worst candidate on the selection seeds, made brilliant on the held-out seeds, is never
    # chosen, and no change to the held-out rows moves a selection score.
    stress = gate_table()
    ranked = rank_candidates(per_seed(stress, "profit")["selection"], STATIC)
    top, worst = ranked["policy"][0], ranked["policy"][-1]
    lucky = plant(stress, worst, profit=50.0, value=50.0, split="test")
    assert run_gate(lucky).candidate == top != worst
    scores = [(r["policy"], r["score"]) for r in run_gate(stress, n_candidates=4).candidates]
    assert [(r["policy"], r["score"]) for r in run_gate(lucky, n_candidates=4).candidates] == scores


def test_gate_refuses_a_clear_winner_whose_lineage_failed_a_blocking_check():
    failed = {**PASSED, WINNER: ("transition_kernels [agent|hotel]: rows_sum_to_one",)}
    decision = run_gate(defence(gate_table()), failed_checks=failed)
    assert not decision.certified
    assert decision.reasons == (
        "not certified: blocking checks failed: transition_kernels [agent|hotel]: rows_sum_to_one",
    )


def test_gate_reports_the_profit_advantage_at_alpha0_one_from_that_cell_only():
    stress = plant(defence(gate_table()), WINNER, profit=7.0, split="test")
    cell = stress.filter((pl.col("alpha0") == REPORTED_ALPHA0) & (pl.col("split") == "test")
                         & (pl.col("detector") == "fitted"))  # fmt: skip
    means = cell.group_by("policy").agg(pl.col("profit").mean()).rows_by_key("policy")
    decision = run_gate(stress)
    reported = decision.profit_at_reported_alpha0
    assert reported.n == 8
    assert reported.mean_diff == pytest.approx(means[WINNER][0][0] - means[STATIC][0][0])
    without = run_gate(stress.filter(pl.col("alpha0") != REPORTED_ALPHA0))
    assert without.profit_at_reported_alpha0 is None
    assert without.to_dict()["profit_at_reported_alpha0"] is None


def test_gate_is_reproducible_and_its_numbers_are_json_with_the_contract_keys():
    stress = gate_table(seed=3, test_seeds=20)  # random sign flips above 16 seeds
    first = run_gate(stress).to_dict()
    assert first == run_gate(stress).to_dict()
    json.dumps(first, allow_nan=False)
    assert set(GATE_CONTRACT_KEYS) <= set(first) and first["baseline"] == STATIC
    assert first["n_pairs"] == 20 and first["human_harm"]["metric"] == "human_harm"


def test_holm_adjust_matches_the_step_down_definition():
    p = [0.01, 0.04, 0.03, 0.2]
    # sorted 0.01, 0.03, 0.04, 0.2 -> 4*0.01, max(.04, 3*.03), max(.09, 2*.04), max(.09, .2)
    assert holm_adjust(p) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    with pytest.raises(ValueError, match="p-values"):
        holm_adjust([1.5])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t.filter(pl.col("split") == "selection"), "both a 'selection' and a 'test'"),
        (lambda t: t.filter(pl.col("policy") != STATIC), "static engine"),
        (
            lambda t: t.filter(~((pl.col("policy") == STATIC) & (pl.col("seed") == 12))),
            "different test seeds",
        ),
        (
            lambda t: t.filter((pl.col("policy") != WINNER) | (pl.col("detector") == "fitted")),
            "no selection stress rows",
        ),
        (lambda t: t.drop("human_harm"), "lack columns"),
        (lambda t: t.drop("detector"), "lack columns"),
        (
            lambda t: t.with_columns(
                seed=pl.when(pl.col("split") == "test")
                .then(pl.col("seed") - 8)
                .otherwise(pl.col("seed"))
            ),
            "overlap",
        ),
    ],
)
def test_gate_rejects_broken_stress_tables_naming_the_problem(mutate, message):
    with pytest.raises(ValueError, match=message):
        run_gate(mutate(defence(gate_table())))


def test_gate_needs_check_results_for_every_tested_candidate():
    with pytest.raises(ValueError, match="no check results"):
        run_gate(gate_table(), failed_checks={})


def test_selection_prefers_candidates_within_the_harm_bound():
    """A harmful defence with the best score on the selection seeds is passed over for one whose
    selection-seed harm is within the bound: the gate would refuse it anyway."""
    stress = plant(defence(gate_table()), WINNER, profit=5.0, value=5.0, harm=0.1)
    other = next(p for p in stress["policy"].unique().sort() if p not in (WINNER, STATIC))
    stress = defence(stress, other)
    ranked = select_candidates(stress, STATIC, HARM_BOUND, 100)
    assert ranked["policy"][0] == other
    assert ranked.filter(pl.col("policy") == WINNER)["harm_within"].to_list() == [False]
    assert ranked["harm_within"].to_list()[-1] is False  # the harmful one ranks after the rest
    assert ranked.filter(~pl.col("harm_within"))["policy"].to_list() == [WINNER]
