"""Which policy is up for certification, and what it must beat (DESIGN §8).

The candidate is the robust-mode policy with the best mean stress metric; the baseline it must
beat is its baseline-mode twin (same tier, same training α), so the comparison isolates the
defence itself. Both were stress-tested with the same episode seeds, so their episodes pair up.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from phantom_assets.policies import baseline_twin


def choose_candidate(stress: pl.DataFrame, metric: str = "reward") -> tuple[str, str]:
    """(candidate, baseline) policy keys from a stress frame with a `policy` column.

    Raises:
        ValueError: if no robust policy has a baseline twin in `stress`.
    """
    means = stress.group_by("policy").agg(pl.col(metric).mean()).sort(metric, descending=True)
    present = set(means["policy"].to_list())
    for key in means["policy"].to_list():  # one iteration per policy, best first
        twin = baseline_twin(key)
        if twin in present:
            return key, twin
    raise ValueError(f"no robust policy with a baseline twin among {sorted(present)}")


def paired_metric(
    stress: pl.DataFrame, candidate: str, baseline: str, metric: str = "reward"
) -> tuple[np.ndarray, np.ndarray]:
    """The two policies' stress `metric`, aligned by episode seed (common random numbers)."""

    def pick(key: str) -> pl.DataFrame:
        return stress.filter(pl.col("policy") == key).select("seed", metric)

    joined = pick(candidate).join(pick(baseline), on="seed", suffix="_baseline").sort("seed")
    if joined.height == 0:
        raise ValueError(f"{candidate} and {baseline} share no stress episode seed")
    return joined[metric].to_numpy(), joined[f"{metric}_baseline"].to_numpy()
