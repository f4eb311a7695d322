"""The agent ledger (docs/method.md#the-agent-ledger): what engagement pricing is worth to a store,
what agents take of it, and what detection wins back -- in money per episode and as a share of the
store's best undefended profit without agents, with store-sample intervals.

Per K and α of the grid, every "best" action is refined on the continuous action space
(`optimize`) on the *selection* seeds, then evaluated on the disjoint *held-out* seeds, paired
per seed (common random numbers; each seed a replicate of the store's sample, so the intervals
cover the store's finite data: `intervals.store_interval`):

- personalization_value (α = 0): best engagement pricing (level, m) − best uniform price (level);
- agents_take: best undefended profit at α = 0 − best undefended profit at α (what agents cost
  a store that re-tunes its prices but cannot tell them apart);
- perfect_detector: best defended action with a perfect detector (agents score 1, humans 0) −
  the best undefended response at α: what detection could win back at most;
- fitted_detector: the same with the store's fitted quote-time detector; beside it its share of
  the perfect detector's value (`fitted_share`, a ratio of means) and what it is worth beyond
  engagement (`beyond_engagement`: the same action with f permuted within engagement strata,
  the certificate's detector value);
- human_harm, human_quoted_up, human_surplus_change: what the fitted detector's action costs
  humans against the best undefended response at α (docs/method.md#human-harm);
- adapted_fitted_detector, adapted_beyond_engagement (per swept evasion share θ > 0, column
  `theta`): the fitted detector's action, chosen on the logged agents, when agents adapt
  (docs/detector.md#agents-that-adapt); adapted_agents_flagged the share of agent sessions τ
  then flags and adapted_time_cost_s the extra seconds an adapting session takes to its quote.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from phantom_assets.market.columns import STEP_COLUMNS
from phantom_assets.market.intervals import STORE_INTERVAL_METHOD, store_interval
from phantom_assets.market.metrics import totals_metrics
from phantom_assets.market.optimize import Optimum, best_action, cell_objective
from phantom_assets.market.oracle import KERNEL_ONLY, PERFECT, PERMUTED, action_totals
from phantom_assets.market.spec import MarketSpec

__all__ = [
    "LEDGER_QUANTITIES",
    "LEDGER_SCHEMA",
    "agent_ledger",
    "ledger_markdown",
    "ledger_sentences",
]

LEDGER_QUANTITIES: tuple[str, ...] = (
    "personalization_value",
    "agents_take",
    "perfect_detector",
    "fitted_detector",
    "fitted_share",
    "kernel_only_detector",
    "kernel_only_share",
    "beyond_engagement",
    "human_harm",
    "human_quoted_up",
    "human_surplus_change",
)
"""The ledger's quantities at θ = 0, in the order it lists them (the §12 contract's `quantity`)."""
EVASION_QUANTITIES: tuple[str, ...] = (
    "adapted_fitted_detector",
    "adapted_beyond_engagement",
    "adapted_agents_flagged",
    "adapted_time_cost_s",
)
"""The ledger's quantities per evasion share θ > 0."""
_MONEY = (
    "personalization_value",
    "agents_take",
    "perfect_detector",
    "fitted_detector",
    "kernel_only_detector",
    "beyond_engagement",
    "adapted_fitted_detector",
    "adapted_beyond_engagement",
)
_SHARES = ("fitted_share", "kernel_only_share")
_BANK_METHOD = "the agent bank's sessions (no interval)"
LEDGER_SCHEMA: dict[str, pl.DataType] = {
    "alpha": pl.Float64(),
    "k": pl.Int64(),
    "theta": pl.Float64(),
    "quantity": pl.String(),
    "value": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "share_of_profit": pl.Float64(),
    "n": pl.Int64(),
    "action": pl.String(),
    "method": pl.String(),
}
"""Contract of `market_oracle/ledger.parquet` (docs/architecture.md#column-contracts)."""


@dataclass(frozen=True)
class _Cell:
    """The best actions of one (α, K), chosen on the selection seeds."""

    undefended: Optimum
    perfect: Optimum
    fitted: Optimum
    kernel_only: Optimum


def _text(optimum: Optimum) -> str:
    level, markup, delta = optimum.action
    return f"level {level:.3g}, m {markup:.3g}, δ {delta:.3g}"


def _per_seed(
    spec: MarketSpec,
    action: Sequence[float],
    alpha: float,
    k: int,
    seeds: Sequence[int],
    detector: str = "fitted",
    reference: Sequence[float] | None = None,
) -> dict[str, np.ndarray]:
    """Each held-out seed's episode metrics of one fixed action."""
    ref = None if reference is None else (float(reference[0]), float(reference[1]))
    totals = action_totals(spec, [tuple(action)], [alpha], k, seeds, detector, ref)[0, :, 0]
    total = {name: totals[:, i] for i, name in enumerate(STEP_COLUMNS)}
    humans = spec.shoppers_per_step * spec.episode_steps - total["agents"]
    return totals_metrics(total, humans)


def _row(
    alpha: float,
    k: int,
    quantity: str,
    values: np.ndarray,
    scale: float,
    action: str,
    level: float,
    theta: float = 0.0,
) -> dict[str, object]:
    interval = store_interval(values, level)
    share = interval.mean / scale if quantity in _MONEY and scale > 0 else math.nan
    return {
        "alpha": alpha,
        "k": k,
        "theta": theta,
        "quantity": quantity,
        "value": interval.mean,
        "ci_low": interval.ci_low,
        "ci_high": interval.ci_high,
        "share_of_profit": share,
        "n": interval.n,
        "action": action,
        "method": STORE_INTERVAL_METHOD,
    }


def _point_row(
    alpha: float,
    k: int,
    quantity: str,
    value: float,
    n: int,
    action: str,
    method: str,
    theta: float = 0.0,
) -> dict[str, object]:
    """A row that carries a value without an interval (`method` says what it is)."""
    return {
        "alpha": alpha,
        "k": k,
        "theta": theta,
        "quantity": quantity,
        "value": value,
        "ci_low": math.nan,
        "ci_high": math.nan,
        "share_of_profit": math.nan,
        "n": n,
        "action": action,
        "method": method,
    }


def _share_row(
    alpha: float, k: int, quantity: str, won: np.ndarray, won_perfect: np.ndarray, action: str
) -> dict[str, object]:
    """What a detector wins back as a share of what a perfect one would (a ratio of means)."""
    ratio = float(np.mean(won) / np.mean(won_perfect)) if np.mean(won_perfect) > 0 else math.nan
    return _point_row(alpha, k, quantity, ratio, len(won), action, "ratio of the two means")


def agent_ledger(
    spec: MarketSpec,
    alphas: Sequence[float],
    ks: Sequence[int],
    selection_seeds: Sequence[int],
    test_seeds: Sequence[int],
    level: float = 0.95,
) -> pl.DataFrame:
    """The ledger (module docstring): `LEDGER_SCHEMA` rows per (α, K, quantity); α = 0 carries
    the personalization value, every α > 0 the rest."""
    rows: list[dict[str, object]] = []
    for k in sorted({int(k) for k in ks}):  # the draws depend on K
        uniform = best_action(spec, cell_objective(spec, 0.0, k, selection_seeds), "uniform")
        engaged = best_action(spec, cell_objective(spec, 0.0, k, selection_seeds), "undefended")
        base = _per_seed(spec, engaged.action, 0.0, k, test_seeds)["profit"]
        scale = float(np.mean(base))
        flat = _per_seed(spec, uniform.action, 0.0, k, test_seeds)["profit"]
        rows.append(
            _row(
                0.0,
                k,
                "personalization_value",
                base - flat,
                scale,
                f"{_text(engaged)} vs {_text(uniform)}",
                level,
            )
        )
        for alpha in sorted({float(a) for a in alphas if a > 0}):
            cell = _best(spec, alpha, k, selection_seeds)
            undefended = _per_seed(spec, cell.undefended.action, alpha, k, test_seeds)["profit"]
            perfect = _per_seed(spec, cell.perfect.action, alpha, k, test_seeds, PERFECT)
            fitted = _per_seed(
                spec, cell.fitted.action, alpha, k, test_seeds, reference=cell.undefended.action[:2]
            )
            permuted = _per_seed(spec, cell.fitted.action, alpha, k, test_seeds, PERMUTED)
            kernel_only = _per_seed(
                spec, cell.kernel_only.action, alpha, k, test_seeds, KERNEL_ONLY
            )["profit"]
            won, won_perfect = fitted["profit"] - undefended, perfect["profit"] - undefended
            won_kernel = kernel_only - undefended
            rows += [
                _row(
                    alpha, k, "agents_take", base - undefended, scale, _text(cell.undefended), level
                ),
                _row(alpha, k, "perfect_detector", won_perfect, scale, _text(cell.perfect), level),
                _row(alpha, k, "fitted_detector", won, scale, _text(cell.fitted), level),
                _share_row(alpha, k, "fitted_share", won, won_perfect, _text(cell.fitted)),
                _row(
                    alpha,
                    k,
                    "kernel_only_detector",
                    won_kernel,
                    scale,
                    _text(cell.kernel_only),
                    level,
                ),
                _share_row(
                    alpha, k, "kernel_only_share", won_kernel, won_perfect, _text(cell.kernel_only)
                ),
                _row(
                    alpha,
                    k,
                    "beyond_engagement",
                    fitted["profit"] - permuted["profit"],
                    scale,
                    _text(cell.fitted),
                    level,
                ),
                *(
                    _row(alpha, k, name, fitted[name], scale, _text(cell.fitted), level)
                    for name in ("human_harm", "human_quoted_up", "human_surplus_change")
                ),
                *_adapted_rows(spec, cell, alpha, k, test_seeds, undefended, scale, level),
            ]
    order = {name: i for i, name in enumerate((*LEDGER_QUANTITIES, *EVASION_QUANTITIES))}
    return (
        pl.DataFrame(rows, schema=LEDGER_SCHEMA)
        .with_columns(pl.col("quantity").replace_strict(order).alias("_order"))
        .sort("k", "alpha", "theta", "_order")
        .drop("_order")
    )


def _adapted_rows(
    spec: MarketSpec,
    cell: _Cell,
    alpha: float,
    k: int,
    seeds: Sequence[int],
    undefended: np.ndarray,
    scale: float,
    level: float,
) -> list[dict[str, object]]:
    """The fitted detector's action (chosen on the logged agents) when agents adapt with each
    swept evasion share θ > 0: what it still wins back, its value beyond engagement, the share
    of agent sessions τ flags and the extra seconds an adapting session takes to its quote."""
    rows: list[dict[str, object]] = []
    action = _text(cell.fitted)
    for t, theta in enumerate(spec.evasion_thetas):
        if theta == 0.0:
            continue  # the logged agents: the fitted rows above
        adapted = spec.evaded(theta)
        fitted = _per_seed(
            adapted, cell.fitted.action, alpha, k, seeds, reference=cell.undefended.action[:2]
        )["profit"]
        permuted = _per_seed(adapted, cell.fitted.action, alpha, k, seeds, PERMUTED)["profit"]
        flagged = np.mean(spec.agent_evasion_score[t] > spec.detector_threshold)  # type: ignore[index]
        constant = {
            "adapted_agents_flagged": float(flagged),
            "adapted_time_cost_s": float(spec.evasion_time_cost_s[t]),
        }
        rows += [
            _row(
                alpha,
                k,
                "adapted_fitted_detector",
                fitted - undefended,
                scale,
                action,
                level,
                theta,
            ),
            _row(
                alpha,
                k,
                "adapted_beyond_engagement",
                fitted - permuted,
                scale,
                action,
                level,
                theta,
            ),
            *(
                _point_row(alpha, k, name, value, len(seeds), action, _BANK_METHOD, theta)
                for name, value in constant.items()
            ),
        ]
    return rows


def _best(spec: MarketSpec, alpha: float, k: int, seeds: Sequence[int]) -> _Cell:
    """The cell's best undefended action and best defended ones (perfect and fitted detector)."""
    fitted = cell_objective(spec, alpha, k, seeds)
    undefended = best_action(spec, fitted, "undefended")
    also = [undefended.action]  # δ = 0 is a defended action: no defended search ends below it
    return _Cell(
        undefended,
        best_action(spec, cell_objective(spec, alpha, k, seeds, PERFECT), "defended", also=also),
        best_action(spec, fitted, "defended", also=also),
        best_action(
            spec, cell_objective(spec, alpha, k, seeds, KERNEL_ONLY), "defended", also=also
        ),
    )


def ledger_markdown(ledger: pl.DataFrame, k: int) -> str:
    """The ledger at one K as a markdown table: money per episode with its interval and the
    share of the best undefended profit at α = 0 (θ: the agents' evasion share)."""
    rows = ledger.filter(pl.col("k") == k)
    lines = [
        "| α | θ | quantity | value [95% CI] | % of α = 0 profit | action |",
        "|---:|---:|---|---|---:|---|",
    ]
    for r in rows.iter_rows(named=True):
        share = ""
        if r["quantity"] in _MONEY:
            value = f"{r['value']:,.0f} [{r['ci_low']:,.0f}, {r['ci_high']:,.0f}]"
            share = f"{100 * r['share_of_profit']:.1f}%"
        elif r["quantity"] in _SHARES:
            value = f"{r['value']:.0%} of the perfect detector"
        elif r["quantity"] == "adapted_agents_flagged":
            value = f"{r['value']:.1%} of agent sessions"
        elif r["quantity"] == "adapted_time_cost_s":
            value = f"+{r['value']:,.1f} s per session to its quote"
        else:
            value = f"{r['value']:.4f} [{r['ci_low']:.4f}, {r['ci_high']:.4f}]"
        lines.append(
            f"| {r['alpha']:g} | {r['theta']:g} | {r['quantity']} | {value} | {share} | "
            f"{r['action']} |"
        )
    return "\n".join(lines) + "\n"


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _money(row: Mapping[str, Any]) -> str:
    """`value (share) [ci_low, ci_high]` of a money row."""
    share = row.get("share_of_profit")
    share_text = f" ({share:.1%})" if _finite(share) else ""
    value = f"{round(row['value']):,}" if _finite(row["value"]) else "n/a"  # no "-0"
    if not (_finite(row.get("ci_low")) and _finite(row.get("ci_high"))):
        return f"{value}{share_text}"
    return f"{value}{share_text} [{round(row['ci_low']):,}, {round(row['ci_high']):,}]"


def ledger_sentences(
    rows: Sequence[Mapping[str, Any]], k: int, evasion_band: float | None = None
) -> list[str]:
    """The ledger at one K in plain sentences (money per episode, share of the best undefended
    profit at α = 0, 95% store-sample interval): what the summary, the certificate and the README
    lead with. `rows`: ledger rows as mappings (`LEDGER_SCHEMA`); `evasion_band`: the declared θ
    band whose worst case the adapted-agents sentence states (None: no such sentence)."""
    at_k = [r for r in rows if r["k"] == k]
    cell = {(float(r["alpha"]), r["quantity"]): r for r in at_k if not r.get("theta")}
    lines = []
    value = cell.get((0.0, "personalization_value"))
    if value is not None:
        lines.append(
            f"engagement pricing is worth {_money(value)} per episode over the best "
            f"uniform price without agents"
        )
    for alpha in sorted({float(r["alpha"]) for r in at_k if r["alpha"] > 0}):
        take, perfect = cell[(alpha, "agents_take")], cell[(alpha, "perfect_detector")]
        fitted, share = cell[(alpha, "fitted_detector")], cell[(alpha, "fitted_share")]
        beyond, harm = cell[(alpha, "beyond_engagement")], cell[(alpha, "human_harm")]
        share_text = (
            "" if not _finite(share["value"]) else f", {share['value']:.0%} of the perfect one"
        )
        kernel = cell.get((alpha, "kernel_only_share"))
        if kernel is not None and _finite(kernel["value"]):
            share_text += f" (the kernel-only detector: {kernel['value']:.0%})"
        harm_text = f"; human harm {harm['value']:.2%}" if _finite(harm["value"]) else ""
        lines.append(
            f"at α = {alpha:g}, K = {k}: agents take {_money(take)}; a perfect detector would win "
            f"back {_money(perfect)}; the fitted detector wins back {_money(fitted)}{share_text}"
            f" ({_money(beyond)} of it beyond engagement){harm_text}"
        )
        if evasion_band is not None:
            lines += _adapted_sentence(at_k, alpha, k, evasion_band)
    return lines


def _adapted_sentence(
    rows: Sequence[Mapping[str, Any]], alpha: float, k: int, band: float
) -> list[str]:
    """The worst value beyond engagement of the fitted detector's action over the swept θ in
    (0, band], and at θ = 1 when swept (nothing when no θ > 0 was swept)."""
    adapted = {
        (float(r["theta"]), r["quantity"]): r
        for r in rows
        if float(r["alpha"]) == alpha and r.get("theta")
    }
    thetas = sorted({theta for theta, _ in adapted})
    in_band = [t for t in thetas if t <= band + 1e-12]
    if not thetas:
        return []
    text = (
        f"if agents adapt (evasion share θ, declared band θ ≤ {band:g}) at α = {alpha:g}, K = {k}"
    )
    if in_band:
        worst = min(in_band, key=lambda t: adapted[t, "adapted_beyond_engagement"]["value"])
        row = adapted[worst, "adapted_beyond_engagement"]
        flagged = adapted[worst, "adapted_agents_flagged"]["value"]
        cost = adapted[worst, "adapted_time_cost_s"]["value"]
        text += (
            f": the detector's value beyond engagement is at worst {_money(row)} (θ = {worst:g};"
            f" τ then flags {flagged:.0%} of agent sessions, each {cost:,.1f} s slower)"
        )
    if 1.0 in thetas:
        mimic = adapted[1.0, "adapted_beyond_engagement"]
        text += f"; agents that mimic humans fully (θ = 1): {_money(mimic)}"
    return [text]
