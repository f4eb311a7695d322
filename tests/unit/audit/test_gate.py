"""Promotion gate: selection seeds choose, held-out seeds test the agent-aware defence against
the best undefended response (the tuned-static tier), at the worst cell (α, θ) of the stress band.

Fixtures have the real shape (6 learnable candidates, 2 heuristics, the tuned-static baseline and
the static engine × 3 α0 cells × their band α × 2 evasion shares θ × 8 selection + 24 held-out
episode seeds × training seeds × both detectors), built by the calibration study's own table
builder, so a many-to-many join or a selection on the test seeds shows up here.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

from phantom_assets.audit import MeanTestResult, holm_adjust, select_candidates
from phantom_assets.audit.gate import COMPARISON_ROLES, MIN_TEST_SEEDS
from phantom_assets.audit.records import GATE_CONTRACT_KEYS
from phantom_assets.calibration.gate import BASELINE, HARM_BOUND, HEURISTICS, STATIC
from tests.unit.audit.conftest import PASSED, WINNER, defence, gate_table, plant, run_gate


def _profit(decision) -> MeanTestResult:
    return decision.tests[0]


def test_gate_certifies_a_planted_agent_aware_defence_on_held_out_seeds():
    decision = run_gate(defence(gate_table(train_seeds=3)))
    assert decision.certified, decision.reasons
    assert (decision.candidate, decision.baseline, decision.static) == (WINNER, BASELINE, STATIC)
    assert decision.n_pairs == 24 == len(decision.test_seeds)
    assert set(decision.selection_seeds).isdisjoint(decision.test_seeds)
    profit, detector, harm = decision.tests
    assert profit.ci_low > 0 and detector.ci_low > 0 and harm.ci_high < HARM_BOUND
    assert profit.mean == pytest.approx(4.0, abs=0.5) and detector.mean == pytest.approx(1, 0.2)
    assert decision.p_value <= 0.025
    assert decision.reasons[0].startswith("certified: all blocking checks passed")
    gate = decision.to_dict()
    assert [c["role"] for c in gate["comparisons"]] == list(COMPARISON_ROLES)
    assert gate["reported"]["profit_vs_static"]["reference"] == STATIC


def test_gate_refuses_a_class_blind_rule():
    # Indistinguishable humans and agents: permuted f quotes exactly like fitted f, so the
    # detector value is 0 on every seed however much the rule beats the baseline
    # (docs/method.md#detector-value).
    stress = plant(gate_table(), WINNER, profit=10.0)
    fitted = stress.filter(pl.col("detector") == "fitted")
    stress = pl.concat([fitted, fitted.with_columns(detector=pl.lit("permuted"))])
    decision = run_gate(stress)
    assert not decision.certified
    profit, detector, _ = decision.tests
    assert profit.ci_low > 0 and detector.mean == 0.0 and detector.p_value == 1.0
    (reason,) = [r for r in decision.reasons if "detector" in r]
    assert reason == (
        "not certified: the detector adds nothing beyond engagement: the fitted detector earns "
        "exactly what the permuted one earns on all 24 held-out seeds"
    )


def test_a_candidate_playing_the_baselines_action_on_every_seed_has_nothing_to_certify():
    # Why: this read "all 24 seeds equal 0: no spread, no evidence (one-sided p = 1 for mean >
    # 0) does not reject", three times over, for a candidate identical to the baseline.
    stress = gate_table().with_columns(
        profit=pl.col("seed").cast(pl.Float64) + pl.col("alpha"), human_harm=pl.lit(0.0)
    )
    decision = run_gate(stress)
    assert not decision.certified
    assert decision.reasons == (
        f"not certified: {decision.candidate} plays the action of the baseline {BASELINE} on "
        "all 24 held-out seeds (the same profit on every seed): nothing to certify",
    )


def test_zero_harm_on_every_seed_is_said_plainly_to_be_within_the_bound_but_no_evidence():
    # Identical values have no spread: the test cannot bound their mean (studentized.py says
    # why it must not pass them), and the reason says so in words.
    decision = run_gate(defence(gate_table()).with_columns(human_harm=pl.lit(0.0)))
    assert not decision.certified
    assert decision.reasons == (
        "not certified: the human harm is 0 on all 24 held-out seeds, within the bound 0.02 on "
        "every seed, but identical values leave the test no spread to bound the mean with: no "
        "evidence that it stays below the bound",
    )


def test_gate_refuses_a_defence_that_harms_humans_beyond_the_bound():
    # Harmless on the selection seeds (so it is selected), harmful on the held-out seeds.
    decision = run_gate(plant(defence(gate_table()), WINNER, harm=0.1, split="test"))
    assert not decision.certified and decision.candidate == WINNER
    profit, detector, harm = decision.tests
    assert harm.mean > HARM_BOUND and profit.ci_low > 0 and detector.ci_low > 0
    (reason,) = decision.reasons
    assert reason.startswith(
        "not certified: the total human harm is not shown below the bound 0.02: mean 0.1"
    )
    assert ", 95% CI [" in reason and "held-out seeds" in reason


def test_the_advantage_is_tested_at_the_worst_alpha_of_the_band_chosen_on_selection_seeds():
    # The defence beats the baseline by 4 everywhere but at alpha = 0.3 of the alpha0 = 0.5
    # band, where it only breaks even: the comparison is made there, on held-out seeds too.
    stress = plant(defence(gate_table()), WINNER, profit=-4.0, alpha=0.3)
    decision = run_gate(stress)
    profit_at = {c["alpha0"]: c["alpha"] for c in decision.compared_at[0]["compared_at"]}
    assert profit_at[0.5] == 0.3
    # One of the three cells of a seed breaks even: the seed's advantage is ~4 * 2/3, and ...
    assert _profit(decision).mean == pytest.approx(4 * 2 / 3, abs=0.4)
    # ... an effect on held-out seeds only at another alpha never moves the tested values.
    lucky = plant(stress, WINNER, profit=50.0, split="test", alpha=0.7)
    assert _profit(run_gate(lucky)).mean == _profit(decision).mean


def test_a_detector_value_that_agents_adapting_within_the_band_take_away_is_not_certified():
    # The defence's detector is worth 1 with the agents as logged; agents that adapt with the
    # band's θ = 0.25 score like humans, so there it is worth 0 (and the advantage drops by as
    # much). The gate decides at the worst θ, found on the selection seeds, and says where.
    assert run_gate(defence(gate_table())).certified
    decision = run_gate(plant(defence(gate_table()), WINNER, value=-1.0, theta=0.25))
    assert not decision.certified and decision.candidate == WINNER
    profit, detector, _ = decision.tests
    assert profit.ci_low > 0 and detector.mean == pytest.approx(0.0, abs=0.1)
    compared = decision.compared_at[1]["compared_at"]
    assert {c["theta"] for c in compared} == {0.25} and len(compared) == 3
    assert any("detector's value beyond engagement is not shown" in r for r in decision.reasons)
    assert decision.to_dict()["evasion_thetas"] == [0.0, 0.25]


def test_holm_combines_the_three_p_values_of_each_tested_candidate():
    stress = plant(defence(gate_table()), "ppo-robust-a050", profit=4.0, value=1.5)
    decision = run_gate(stress, n_candidates=3)
    assert decision.certified and decision.candidate in {WINNER, "ppo-robust-a050"}
    table = decision.candidates
    assert len(table) == 3
    for row in table:
        assert row["p_value"] == max(row["p_profit"], row["p_detector"], row["p_harm"])
    assert [r["p_holm"] for r in table] == pytest.approx(
        list(holm_adjust([r["p_value"] for r in table]))
    )


def test_too_few_held_out_seeds_never_certify_even_a_clear_winner():
    decision = run_gate(plant(gate_table(test_seeds=8), WINNER, profit=30.0, value=10.0))
    assert not decision.certified and decision.candidate == WINNER
    assert decision.reasons == (
        f"not certified: 8 held-out seeds < {MIN_TEST_SEEDS}, the fewest the tests are "
        "calibrated for (evaluation.test_episodes)",
    )


def test_gate_selects_on_selection_seeds_only():
    # The worst candidate on the selection seeds, made brilliant on the held-out seeds, is never
    # chosen, and no change to the held-out rows moves a selection score.
    stress = gate_table()
    ranked = select_candidates(stress, BASELINE, [STATIC], HARM_BOUND, 100)
    top, worst = ranked["policy"][0], ranked["policy"][-1]
    lucky = plant(stress, worst, profit=50.0, value=50.0, split="test")
    assert run_gate(lucky).candidate == top != worst
    scores = [(r["policy"], r["score"]) for r in run_gate(stress, n_candidates=4).candidates]
    assert [(r["policy"], r["score"]) for r in run_gate(lucky, n_candidates=4).candidates] == scores


def test_candidates_are_every_policy_but_the_references_ranked_by_the_weaker_effect():
    ranked = select_candidates(gate_table(), BASELINE, [STATIC], HARM_BOUND, 100)
    assert {BASELINE, STATIC}.isdisjoint(ranked["policy"])
    assert set(HEURISTICS) <= set(ranked["policy"]) and ranked.height == 8
    for row in ranked.iter_rows(named=True):
        assert row["score"] == min(row["profit_advantage"], row["detector_value"])
    assert ranked["score"].is_sorted(descending=True)
    # delta = 0 quotes alike with either f: the heuristics' detector value is exactly zero.
    heuristics = ranked.filter(pl.col("policy").is_in(HEURISTICS))
    assert heuristics["detector_value"].to_list() == [0.0, 0.0]
    with pytest.raises(ValueError, match="baseline 'tuned-a100' has no stress rows"):
        select_candidates(gate_table(), "tuned-a100", [STATIC], HARM_BOUND, 1)


def test_gate_refuses_a_clear_winner_whose_lineage_failed_a_blocking_check():
    failed = {**PASSED, WINNER: ("transition_kernels [agent|hotel]: rows_sum_to_one",)}
    decision = run_gate(defence(gate_table()), failed_checks=failed)
    assert not decision.certified
    assert decision.reasons == (
        "not certified: blocking checks failed: transition_kernels [agent|hotel]: rows_sum_to_one",
    )


def test_gate_reports_the_static_engine_and_the_false_positive_rate_at_alpha_0_only():
    stress = defence(gate_table()).with_columns(
        false_positive_rate=pl.when(pl.col("alpha") == 0.0).then(0.02).otherwise(0.5)
    )
    reported = run_gate(stress).reported
    assert reported["false_positive_rate_at_alpha_0"] == pytest.approx(0.02)
    assert reported["profit_vs_static"]["n"] == 24
    assert "human_surplus_change" not in reported  # reported only when the rows have it


def test_gate_is_reproducible_and_its_numbers_are_json_with_the_contract_keys():
    stress = defence(gate_table(seed=3))
    first = run_gate(stress).to_dict()
    assert first == run_gate(stress).to_dict()
    json.dumps(first, allow_nan=False)
    assert set(GATE_CONTRACT_KEYS) <= set(first) and first["baseline"] == BASELINE
    assert first["n_pairs"] == 24 and first["comparisons"][2]["threshold"] == HARM_BOUND


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
        (lambda t: t.filter(pl.col("policy") != BASELINE), "baseline"),
        (
            lambda t: t.filter(~((pl.col("policy") == BASELINE) & (pl.col("seed") == 12))),
            "different cells or seeds",
        ),
        (
            lambda t: t.filter((pl.col("policy") != WINNER) | (pl.col("detector") == "fitted")),
            r"no stress rows for \(policy, detector\)",
        ),
        (lambda t: t.drop("human_harm"), "lack columns"),
        (lambda t: t.drop("alpha"), "lack columns"),
        (
            lambda t: t.with_columns(
                seed=pl.when(pl.col("split") == "test")
                .then(pl.col("seed") - 8)
                .otherwise(pl.col("seed"))
            ),
            "both the selection and the test split",
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
    other = "ppo-baseline-a050"
    stress = defence(stress, other)
    ranked = select_candidates(stress, BASELINE, [STATIC], HARM_BOUND, 100)
    assert ranked["policy"][0] == other
    assert ranked["harm_within"].to_list()[-1] is False  # the harmful one ranks after the rest
    assert ranked.filter(~pl.col("harm_within"))["policy"].to_list() == [WINNER]
