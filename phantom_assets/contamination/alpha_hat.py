"""Debiased contamination estimate α̂ with a cluster-bootstrap CI
(docs/method.md#estimated-agent-share).

    α̂ = (f̄ − E[f|H]) / (E[f|A] − E[f|H])

f̄ is the mean agent probability of the dataset's sessions; the class means are estimated from a
*calibration sample* of human and agent sessions whose f has the same law as the dataset's
sessions of that class (for labeled sessions: their out-of-fold f). Every mean is session-weighted
(Σ f / n). α̂ estimates the share of agent *sessions* in the dataset.

Interval: a studentized cluster bootstrap of the Fieller pivot. Each replicate resamples,
independently, whole calibration experiments within each class (the experiment is the independent
unit: its sessions share a subject and a fold) and whole clusters of the dataset (an experiment,
or a session when sessions are independent). The pivot T(α0) = (f̄ − α0·E_A − (1 − α0)·E_H) / s(α0)
(s from cluster-robust variances) is linear in the means; its bootstrap quantiles at α0 = α̂ give
the CI {α0 : q_low <= T(α0) <= q_high}, solved as a quadratic. Percentile and ratio bootstrap-t
intervals of the same replicates undercover the ratio with few agent experiments (0.88-0.92 at 4
agent experiments in the study of `phantom_assets.calibration.alpha_hat`); this one holds 0.95.

Treating the dataset and the calibration sample as independent is exact when they are disjoint
and conservative when they share sessions (G(α) keeps the labeled humans, so their noise partly
cancels in f̄ − E[f|H]). α̂ and the CI bounds are clipped to [0, 1]; the unclipped values are kept.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["AlphaHat", "AlphaHatParams", "ClusterStats", "alpha_hat", "bootstrap_alpha"]

METHOD = (
    "bootstrap-fieller: studentized pivot, experiments resampled within class + dataset clusters"
)
_CHUNK_CELLS = 2_000_000  # reps × draws × clusters gathered at once (memory bound)


@dataclass(frozen=True)
class AlphaHatParams:
    """Knobs of the α̂ interval.

    Attributes:
        level: Nominal coverage of the CI, in (0, 1).
        n_boot: Bootstrap replicates (>= 100).
    """

    level: float = 0.95
    n_boot: int = 1000

    def __post_init__(self) -> None:
        """Validate the level and the number of replicates."""
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"level must be in (0, 1), got {self.level!r}")
        if self.n_boot < 100:
            raise ValueError(f"n_boot must be >= 100, got {self.n_boot!r}")


@dataclass(frozen=True)
class ClusterStats:
    """Per-cluster sufficient statistics of one sample, batched over ``R`` replications.

    Attributes:
        table: ``(R, G, 5)`` per cluster: Σf, (Σf)², Σf·n, n, n² (n = sessions of the cluster).
    """

    table: np.ndarray

    @classmethod
    def of(cls, f: np.ndarray, cluster: np.ndarray | None = None) -> ClusterStats:
        """Stats of ``f`` (``(n,)`` or ``(R, n)``) by ``cluster`` (None: one per session)."""
        f = np.atleast_2d(np.asarray(f, dtype=np.float64))
        ids = np.arange(f.shape[1]) if cluster is None else np.asarray(cluster)
        if ids.shape != (f.shape[1],):
            raise ValueError(f"cluster ids must have shape ({f.shape[1]},), got {ids.shape}")
        _, inverse = np.unique(ids, return_inverse=True)
        g = int(inverse.max()) + 1 if inverse.size else 0
        keys = (np.arange(f.shape[0])[:, None] * g + inverse[None, :]).ravel()
        sums = np.bincount(keys, weights=f.ravel(), minlength=f.shape[0] * g).reshape(-1, g)
        n = np.broadcast_to(np.bincount(inverse, minlength=g).astype(np.float64), sums.shape)
        return cls(np.stack([sums, sums**2, sums * n, n, n * n], axis=-1))

    @property
    def n_clusters(self) -> int:
        """G, the number of clusters."""
        return self.table.shape[1]

    def moments(self, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Session-weighted mean and its cluster-robust variance, per replication (and draw).

        Args:
            weights: ``(R, B, G)`` times each cluster is drawn per bootstrap replicate; None for
                the sample itself.

        Returns:
            ``(mean, var)`` of shape ``(R,)`` (or ``(R, B)`` with ``weights``).
        """
        tot = self.table.sum(axis=1) if weights is None else weights @ self.table
        s, q, sn, n, nn = np.moveaxis(tot, -1, 0)
        g = self.n_clusters
        mean = s / n
        resid = np.maximum(q - 2 * mean * sn + mean**2 * nn, 0.0)
        return mean, g / max(g - 1, 1) * resid / n**2

    def draw_weights(self, reps: int, draws: int, rng: np.random.Generator) -> np.ndarray:
        """``(reps, draws, G)`` multiplicities of a resample of G clusters with replacement."""
        g = self.n_clusters
        picks = rng.integers(0, g, (reps * draws, g))
        keys = (np.arange(reps * draws)[:, None] * g + picks).ravel()
        return np.bincount(keys, minlength=reps * draws * g).reshape(reps, draws, g).astype(float)


Moments = tuple[np.ndarray, np.ndarray]


def _pivot_scale(a0: np.ndarray, d: Moments, h: Moments, a: Moments) -> np.ndarray:
    """sd of f̄ − α0·E[f|A] − (1 − α0)·E[f|H] (independent samples)."""
    return np.sqrt(d[1] + a0**2 * a[1] + (1 - a0) ** 2 * h[1])


def _fieller_bounds(q: np.ndarray, d: Moments, h: Moments, a: Moments) -> np.ndarray:
    """Both roots α0 of (c − α0·D)² = q²·s(α0)² (c = f̄ − E_H, D = E_A − E_H); ±inf if open."""
    c, slope = d[0] - h[0], a[0] - h[0]
    qq = q**2
    lead = slope**2 - qq * (a[1] + h[1])
    half = -(c * slope - qq * h[1])
    const = c**2 - qq * (d[1] + h[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.sqrt(np.maximum(half**2 - lead * const, 0.0))
        low, high = (-half - root) / lead, (-half + root) / lead
    closed = lead > 0
    return np.stack([np.where(closed, low, -np.inf), np.where(closed, high, np.inf)])


def bootstrap_alpha(
    dataset: ClusterStats,
    human: ClusterStats,
    agent: ClusterStats,
    params: AlphaHatParams,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """α̂ and its studentized (bootstrap-Fieller) CI for ``R`` replications at once.

    The pivot T(α0) = (f̄ − α0·E_A − (1 − α0)·E_H) / s(α0) is linear in the three means, so its
    bootstrap law (at α0 = α̂, where T = 0) is well behaved even when the ratio α̂ is not; the CI
    is {α0 : q_low <= T(α0) <= q_high}, two quadratic roots (unbounded where E_A − E_H is not
    distinguishable from 0 at the level).

    Returns:
        ``(R,)`` arrays ``estimate, se, ci_low, ci_high, mean_f, mean_f_human, mean_f_agent``
        (unclipped; ``se`` is the delta-method standard error of α̂).
    """
    samples = (dataset, human, agent)
    d, h, a = (s.moments() for s in samples)
    with np.errstate(divide="ignore", invalid="ignore"):
        est = (d[0] - h[0]) / (a[0] - h[0])
        se = _pivot_scale(est, d, h, a) / np.abs(a[0] - h[0])
    reps, draws = est.shape[0], params.n_boot
    width = max(sum(s.n_clusters for s in samples), 1)
    chunk = max(1, _CHUNK_CELLS // (draws * width))
    t_star = np.empty((reps, draws))
    for start in range(0, reps, chunk):  # loop over memory-sized blocks of replications only
        part = slice(start, min(start + chunk, reps))
        db, hb, ab = (
            sub.moments(sub.draw_weights(est[part].size, draws, rng))
            for sub in (ClusterStats(s.table[part]) for s in samples)
        )
        e = est[part, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (db[0] - e * ab[0] - (1 - e) * hb[0]) / _pivot_scale(e, db, hb, ab)
        t_star[part] = np.where(np.isnan(t), 0.0, t)  # 0/0: a replicate with no spread
    tail = (1 - params.level) / 2
    q_low, q_high = np.quantile(t_star, [tail, 1 - tail], axis=1)
    rising = (a[0] - h[0]) < 0  # T decreases in α0 when E_A > E_H (the usual case)
    low = _fieller_bounds(np.where(rising, q_low, q_high), d, h, a)[0]
    high = _fieller_bounds(np.where(rising, q_high, q_low), d, h, a)[1]
    return {
        "estimate": est,
        "se": se,
        "ci_low": low,
        "ci_high": high,
        "mean_f": d[0],
        "mean_f_human": h[0],
        "mean_f_agent": a[0],
    }


@dataclass(frozen=True)
class AlphaHat:
    """α̂ of one dataset with its CI (clipped to [0, 1]) and what it was computed from."""

    alpha_hat: float
    ci_low: float
    ci_high: float
    alpha_hat_unclipped: float
    ci_low_unclipped: float
    ci_high_unclipped: float
    se: float
    mean_f: float
    mean_f_human: float
    mean_f_agent: float
    level: float
    n_boot: int
    n_sessions: int
    n_human: int
    n_human_experiments: int
    n_agent: int
    n_agent_experiments: int
    method: str = METHOD

    def covers(self, alpha: float) -> bool:
        """True when ``alpha`` lies in the (clipped) CI."""
        return self.ci_low <= alpha <= self.ci_high

    def to_dict(self) -> dict[str, Any]:
        """JSON payload (``alpha_hat.json``)."""
        return asdict(self)


def _clip(value: float) -> float:
    return float(np.clip(value, 0.0, 1.0))


def _check_sample(name: str, f: np.ndarray) -> None:
    if f.size == 0:
        raise ValueError(f"{name} is empty; α̂ needs at least one session of it")
    if not np.isfinite(f).all() or np.any((f < 0) | (f > 1)):
        raise ValueError(f"{name} must be finite agent probabilities in [0, 1]")


def alpha_hat(
    f: np.ndarray,
    f_calibration: np.ndarray,
    is_agent: np.ndarray,
    experiment: np.ndarray,
    rng: np.random.Generator,
    params: AlphaHatParams = AlphaHatParams(),
    *,
    cluster: np.ndarray | None = None,
) -> AlphaHat:
    """α̂ = (f̄ − E[f|H]) / (E[f|A] − E[f|H]) with a studentized cluster-bootstrap CI.

    Args:
        f: Agent probability of every session of the dataset.
        f_calibration: f of the calibration sessions (labeled: out-of-fold), same law per class
            as the dataset's sessions of that class.
        is_agent: True for the agent sessions of the calibration sample.
        experiment: Experiment id per calibration session (resampled as a whole, within class).
        rng: Source of the bootstrap draws.
        params: Level and number of replicates.
        cluster: Cluster id per dataset session (None: sessions are independent).

    Returns:
        The estimate, its CI and the sample sizes.

    Raises:
        ValueError: On an empty sample, f outside [0, 1], mismatched lengths or E[f|A] = E[f|H].
    """
    f = np.asarray(f, dtype=np.float64)
    f_cal = np.asarray(f_calibration, dtype=np.float64)
    agent_mask, experiment = np.asarray(is_agent, dtype=bool), np.asarray(experiment)
    if agent_mask.shape != f_cal.shape or experiment.shape != f_cal.shape or f_cal.ndim != 1:
        raise ValueError(
            f"f_calibration, is_agent and experiment must be equal-length 1-D arrays, got "
            f"{f_cal.shape}, {agent_mask.shape}, {experiment.shape}"
        )
    for name, values in (("f", f), ("human calibration sample", f_cal[~agent_mask])):
        _check_sample(name, values)
    _check_sample("agent calibration sample", f_cal[agent_mask])
    mean_h, mean_a = f_cal[~agent_mask].mean(), f_cal[agent_mask].mean()
    if np.isclose(mean_a, mean_h, rtol=0.0, atol=1e-12):
        raise ValueError(f"E[f|A] = E[f|H] = {mean_a!r}: f does not separate the classes")
    human = ClusterStats.of(f_cal[~agent_mask], experiment[~agent_mask])
    agent = ClusterStats.of(f_cal[agent_mask], experiment[agent_mask])
    out = {
        k: float(v[0])
        for k, v in bootstrap_alpha(ClusterStats.of(f, cluster), human, agent, params, rng).items()
    }
    return AlphaHat(
        alpha_hat=_clip(out["estimate"]),
        ci_low=_clip(out["ci_low"]),
        ci_high=_clip(out["ci_high"]),
        alpha_hat_unclipped=out["estimate"],
        ci_low_unclipped=out["ci_low"],
        ci_high_unclipped=out["ci_high"],
        se=out["se"],
        mean_f=out["mean_f"],
        mean_f_human=out["mean_f_human"],
        mean_f_agent=out["mean_f_agent"],
        level=params.level,
        n_boot=params.n_boot,
        n_sessions=int(f.size),
        n_human=int((~agent_mask).sum()),
        n_human_experiments=human.n_clusters,
        n_agent=int(agent_mask.sum()),
        n_agent_experiments=agent.n_clusters,
    )
