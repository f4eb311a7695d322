"""What the benchmark compares: the paired comparisons and the λ × adversary factorial of the
ablation tier (docs/method.md#benchmark-curves; the regret against the clairvoyant oracle is
`adaptivity`'s).

Comparisons (`comparison_pairs`), all paired on (α, K, episode seed) by `paired_differences`:
- `detector_value`: a policy with the fitted detector − the same policy with permuted f
  (the detector's own contribution, docs/method.md#detector-value);
- `defended_vs_baseline`: a defended mode − the mode it adds one switch to, same tier and
  training α (`DEFENCE_REFERENCE`), fitted detector;
- `vs_tuned_static`: every policy − the tuned-static tier (the best undefended response: the
  comparison the gate certifies on), fitted detector;
- `vs_static`: every policy − the static tier (the undefended engine at the anchors: a reported
  reference only -- beating it may measure no more than a price increase), fitted detector.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from phantom_assets.evaluation.benchmark import design_keys, episode_seed_means, t_intervals
from phantom_assets.evaluation.protocol import FITTED, PERMUTED
from phantom_assets.policies import REFERENCE_MODES, TRAINING_MODES

DETECTOR_VALUE, VS_STATIC, VS_TUNED = "detector_value", "vs_static", "vs_tuned_static"
DEFENDED_VS_BASELINE = "defended_vs_baseline"
DEFENCE_REFERENCE: dict[str, str] = REFERENCE_MODES
"""Defended mode → the mode it is compared with: the adversary alone, the leak charge alone, and
the adversary on top of the charge (`policies.REFERENCE_MODES`)."""
STATIC_TIER, TUNED_TIER = "static", "tuned"
FACTORIAL_MODES: tuple[str, ...] = tuple(TRAINING_MODES)
_SWITCHES = np.array([(m.charged, m.robust) for m in TRAINING_MODES.values()], dtype=float) - 0.5
FACTORIAL_EFFECTS: dict[str, tuple[float, ...]] = {
    "lambda": tuple(_SWITCHES[:, 0].tolist()),
    "adversary": tuple(_SWITCHES[:, 1].tolist()),
    "interaction": tuple((4.0 * _SWITCHES[:, 0] * _SWITCHES[:, 1]).tolist()),
}
"""Contrast weights over `FACTORIAL_MODES` (baseline, robust, charged, robustcharged), from the
modes' switches: main effects are averages over the other switch; the interaction is
(robustcharged − charged) − (robust − baseline)."""
FACTORIAL_METRICS: tuple[str, ...] = ("profit", "leak", "human_harm")
ABLATION_SCHEMA: dict[str, pl.DataType] = {
    "tier": pl.String(),
    "train_alpha": pl.Float64(),
    "alpha": pl.Float64(),
    "k": pl.Int64(),
    "metric": pl.String(),
    "effect": pl.String(),
    "mean": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "n": pl.Int64(),
}
"""Contract of `benchmark_curves/ablation.parquet` (fitted detector)."""


def comparison_pairs(labels: pl.DataFrame) -> pl.DataFrame:
    """The `PAIR_COLUMNS` rows of every comparison among the policies of `labels` (columns
    `policy, tier, mode, train_alpha`; one static policy at most is the reference)."""
    labels = labels.select("policy", "tier", "mode", "train_alpha").unique().sort("policy")
    fitted, permuted = pl.lit(FITTED), pl.lit(PERMUTED)
    detector = labels.select(
        comparison=pl.lit(DETECTOR_VALUE),
        policy="policy",
        detector=fitted,
        reference="policy",
        reference_detector=permuted,
    )
    reference = pl.DataFrame(
        {"mode": list(DEFENCE_REFERENCE), "reference_mode": list(DEFENCE_REFERENCE.values())}
    )
    twins = labels.select("tier", "train_alpha", reference_mode="mode", reference="policy")
    defended = (
        labels.join(reference, on="mode")
        .join(twins, on=["tier", "train_alpha", "reference_mode"])
        .select(
            comparison=pl.lit(DEFENDED_VS_BASELINE),
            policy="policy",
            detector=fitted,
            reference="reference",
            reference_detector=fitted,
        )
    )
    frames = [detector, defended]
    for comparison, tier in ((VS_TUNED, TUNED_TIER), (VS_STATIC, STATIC_TIER)):
        references = labels.filter(pl.col("tier") == tier)["policy"]
        if references.len():
            frames.append(
                labels.filter(pl.col("policy") != references[0]).select(
                    comparison=pl.lit(comparison),
                    policy="policy",
                    detector=fitted,
                    reference=pl.lit(references[0]),
                    reference_detector=fitted,
                )
            )
    return pl.concat(frames)


def factorial_effects(
    evaluations: pl.DataFrame,
    tier: str,
    metrics: Sequence[str] = FACTORIAL_METRICS,
    level: float = 0.95,
) -> pl.DataFrame:
    """Main effects of λ and of the adversary and their interaction (`FACTORIAL_EFFECTS`) for the
    four modes of `tier` at each training α, per (α, K) cell and metric, fitted detector.

    Each mode's training seeds are averaged per episode seed; the contrast is formed per episode
    seed present in all four modes (paired), and gets a Student-t CI over those seeds.

    Returns:
        `ABLATION_SCHEMA` rows (plus `replicate` when present); none when no training α has all
        four modes.
    """
    rows = evaluations.filter(
        (pl.col("tier") == tier)
        & (pl.col("detector") == FITTED)
        & pl.col("mode").is_in(FACTORIAL_MODES)
    )
    if rows.is_empty():
        return pl.DataFrame(schema=ABLATION_SCHEMA)
    means = episode_seed_means(rows.drop("detector"), metrics)
    keys = ["train_alpha", *design_keys(means.columns), "seed"]
    long = means.unpivot(index=[*keys, "mode"], on=list(metrics), variable_name="metric")
    wide = long.pivot("mode", index=[*keys, "metric"], values="value")
    if not set(FACTORIAL_MODES) <= set(wide.columns):
        return pl.DataFrame(schema=ABLATION_SCHEMA)
    wide = wide.drop_nulls(list(FACTORIAL_MODES))
    weights = np.asarray(list(FACTORIAL_EFFECTS.values()))  # (effects, modes)
    effects = wide.select(FACTORIAL_MODES).to_numpy() @ weights.T
    contrasts = (
        wide.select(*keys, "metric")
        .with_columns(**{name: effects[:, i] for i, name in enumerate(FACTORIAL_EFFECTS)})
        .unpivot(index=[*keys, "metric"], on=list(FACTORIAL_EFFECTS), variable_name="effect")
    )
    groups = [k for k in keys if k != "seed"]
    out = t_intervals(contrasts, [*groups, "metric", "effect"], level)
    columns = ["tier", *groups, "metric", "effect", "mean", "ci_low", "ci_high", "n"]
    out = out.with_columns(tier=pl.lit(tier)).select(columns).cast(ABLATION_SCHEMA)  # type: ignore[arg-type]
    return out.sort("train_alpha", "metric", "effect", *groups[1:])
