"""The gate's reasons: why a candidate is (not) certified, in plain sentences with the numbers
(docs/method.md#promotion-gate).

The reasons are a deterministic function of the gate's tests (`phantom audit` re-derives them and
compares them with report.json). Identical values are said as what they are: a candidate that
earns exactly the baseline's profit on every held-out seed plays the baseline's action (nothing
to certify: that one sentence replaces the three tests'), a detector whose fitted and permuted
arms earn the same adds nothing, and a harm that is the same on every seed is within or above
the bound on each seed but no evidence for the mean (`studentized`: its level forbids passing
it).
"""

from __future__ import annotations

from collections.abc import Sequence

from phantom_assets.audit.numbers import readable
from phantom_assets.audit.studentized import MIN_CALIBRATED_N, MeanTestResult

__all__ = ["decision_reasons"]


def decision_reasons(
    policy: str,
    tests: tuple[MeanTestResult | None, ...],
    baseline: str,
    holm_p: float,
    level: float,
    failed: Sequence[str],
    n_test: int,
) -> list[str]:
    """Every condition the candidate `policy` failed, in plain sentences with their numbers
    (certified: the numbers it met).

    Args:
        policy: The candidate.
        tests: Its held-out profit, detector-value and harm tests (harm None: undefined).
        baseline: The best undefended response.
        holm_p: Its Holm-adjusted intersection-union p.
        level: The one-sided level of the decision.
        failed: The failed blocking checks of its lineage.
        n_test: Held-out seeds.
    """
    profit, detector, harm = tests
    if not failed and holm_p <= level and n_test >= MIN_CALIBRATED_N:
        bound = readable(harm.threshold) if harm else "undefined"
        return [
            f"certified: all blocking checks passed; on {n_test} held-out episode seeds "
            f"{policy} beats the best undefended response {baseline}: "
            f"{profit.describe()}; its detector adds value beyond engagement: "
            f"{detector.describe()}; the total human harm stays below the bound {bound}: "
            f"{harm.describe() if harm else 'undefined'}; Holm-adjusted one-sided "
            f"p = {holm_p:.3g} <= {level:.3g}"
        ]
    if _all_zero(profit):
        unmet = [
            f"not certified: {policy} plays the action of the baseline {baseline} on "
            f"all {profit.n} held-out seeds (the same profit on every seed): nothing to "
            "certify"
        ]
    else:
        unmet = [*_unmet_gains(profit, detector, baseline), *_unmet_harm(harm)]
    if n_test < MIN_CALIBRATED_N:
        unmet.append(
            f"not certified: {n_test} held-out seeds < {MIN_CALIBRATED_N}, the fewest the "
            f"tests are calibrated for (evaluation.test_episodes)"
        )
    if not unmet and holm_p > level:
        unmet.append(f"not certified: Holm-adjusted p = {holm_p:.3g} exceeds {level:.3g}")
    checks = [f"not certified: blocking checks failed: {', '.join(failed)}"] if failed else []
    return checks + unmet


def _all_zero(result: MeanTestResult) -> bool:
    """Every held-out value exactly 0: the two arms compared earned the same on every seed."""
    return result.no_spread and result.mean == 0.0


def _unmet_gains(profit: MeanTestResult, detector: MeanTestResult, baseline: str) -> list[str]:
    """The profit advantage and the detector value the test did not show above 0."""
    unmet = []
    if not profit.rejects:
        unmet.append(
            f"not certified: the profit advantage over the best undefended response "
            f"{baseline} is not shown above 0: {profit.describe()}"
        )
    if _all_zero(detector):
        unmet.append(
            f"not certified: the detector adds nothing beyond engagement: the fitted "
            f"detector earns exactly what the permuted one earns on all {detector.n} "
            "held-out seeds"
        )
    elif not detector.rejects:
        unmet.append(
            f"not certified: the detector's value beyond engagement is not shown above "
            f"0: {detector.describe()}"
        )
    return unmet


def _unmet_harm(harm: MeanTestResult | None) -> list[str]:
    """The human harm the test did not show below the bound (identical values said plainly)."""
    if harm is None:
        return [
            "not certified: the human harm cannot be measured: no held-out seed has human spend"
        ]
    if harm.rejects:
        return []
    bound = readable(harm.threshold)
    if harm.no_spread:
        side = "within" if harm.mean <= harm.threshold else "above"
        return [
            f"not certified: the human harm is {readable(harm.mean)} on all {harm.n} "
            f"held-out seeds, {side} the bound {bound} on every seed, but identical values "
            "leave the test no spread to bound the mean with: no evidence that it stays "
            "below the bound"
        ]
    return [
        f"not certified: the total human harm is not shown below the bound {bound}: "
        f"{harm.describe()}"
    ]
