"""The saved form of a trained policy partition: models, weights, curves and `policy.json`.

One folder per store × policy key holds one model per training seed (`model-s<seed>` + the tier's
suffix), the learning curves of every seed, and `policy.json`, the training record. SB3 zips embed
wall-clock times, so SB3 partitions also store their network weights in `weights.npz` (written
with fixed zip timestamps): those bytes, not the zips, identify the partition's content.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import polars as pl

from phantom_assets.lake import CURVE_FILE, POLICY_FILE, WEIGHTS_FILE
from phantom_assets.market import MarketSpec, make_env
from phantom_assets.policies.base import Policy, TrainedPolicy
from phantom_assets.policies.keys import SB3_TIERS
from phantom_assets.policies.qtable import QTablePolicy
from phantom_assets.policies.train import POLICY_FILENAMES, load_policy
from phantom_assets.storage import write_bytes_atomic, write_json_atomic, write_parquet_atomic

RELOAD_PROBES = 64  # observations on which a reloaded policy must act like the trained one


class PolicyRecord(TypedDict):
    """Contents of `policy.json`: what was trained, with which settings, and its weights."""

    tier: str
    mode: str
    alpha: float
    seed: int  # the first training seed
    seeds: list[int]
    hyperparameters: dict[str, Any]
    models: dict[str, str]  # training seed (as a JSON key) -> model file name
    weights_sha256: str
    config_hash: str  # identity of the configuration (not of the key): duplicates count once
    plateau_ratios: dict[str, float | None]  # training seed -> `base.plateau_ratio` (None: none)


def model_file(tier: str, seed: int) -> str:
    """Name of the saved model of one training seed: `model-s<seed>` + the tier's suffix.

    (`policy.json` is the training record, so a heuristic's own JSON is saved beside it.)
    """
    return f"model-s{seed}{Path(POLICY_FILENAMES[tier]).suffix}"


def policy_weights(policy: Policy) -> dict[str, np.ndarray]:
    """The learned numbers of a policy (network weights, Q-table; empty for heuristics)."""
    if isinstance(policy, QTablePolicy):
        return {"q": np.asarray(policy.q)}
    parameters = getattr(policy, "parameters", None)
    return parameters() if callable(parameters) else {}


def weights_digest(weights: dict[str, np.ndarray]) -> str:
    """SHA-256 over names, dtypes, shapes and bytes of the weights (order-independent)."""
    digest = hashlib.sha256()
    for name in sorted(weights):
        array = np.ascontiguousarray(weights[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def policy_record(trained: list[TrainedPolicy], weights: dict[str, np.ndarray]) -> PolicyRecord:
    """The training record of the seeds in `trained` (one tier, mode and α) and their weights."""
    first = trained[0]
    digest = weights_digest(weights)
    identity = {
        "tier": first.tier,
        "hyperparameters": first.hyperparameters,
        "seeds": [t.seed for t in trained],
        "weights_sha256": digest,
    }
    blob = json.dumps(identity, sort_keys=True, default=str).encode()
    return PolicyRecord(
        tier=first.tier,
        mode=first.mode,
        alpha=first.alpha,
        seed=first.seed,
        seeds=[t.seed for t in trained],
        hyperparameters=first.hyperparameters,
        models={str(t.seed): model_file(t.tier, t.seed) for t in trained},
        weights_sha256=digest,
        config_hash=hashlib.sha256(blob).hexdigest()[:16],
        plateau_ratios={str(t.seed): _finite_or_none(t.plateau_ratio) for t in trained},
    )


def _finite_or_none(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None  # JSON has no NaN


def worst_plateau_ratio(record: PolicyRecord) -> float | None:
    """The seeds' plateau ratio farthest from 1 (None when no seed has one: heuristics)."""
    known = [r for r in record["plateau_ratios"].values() if r is not None]
    return max(known, key=lambda r: abs(r - 1.0)) if known else None


def save_trained(folder: Path, trained: list[TrainedPolicy]) -> tuple[list[Path], PolicyRecord]:
    """Write every seed's model, the canonical weights, the curves and `policy.json`.

    Returns the files that identify the partition's content (the SB3 zips are left out: they
    embed wall-clock times; `weights.npz` stands for them) and the training record.
    """
    if not trained:
        raise ValueError(f"nothing to save in {folder}: no trained policy given")
    weights = {
        f"s{t.seed}/{name}": array
        for t in trained
        for name, array in policy_weights(t.policy).items()
    }
    record = policy_record(trained, weights)
    models = [t.policy.save(folder / model_file(t.tier, t.seed)) for t in trained]
    curve = pl.concat(
        [t.learning_curve.with_columns(train_seed=pl.lit(t.seed, pl.Int64)) for t in trained]
    )
    write_parquet_atomic(curve, folder / CURVE_FILE)
    write_json_atomic(record, folder / POLICY_FILE)
    identifying = [folder / POLICY_FILE, folder / CURVE_FILE]
    if record["tier"] in SB3_TIERS:
        buffer = io.BytesIO()  # np.savez writes fixed zip timestamps: reproducible bytes
        np.savez(buffer, **{k.replace("/", "__"): v for k, v in sorted(weights.items())})
        write_bytes_atomic(buffer.getvalue(), folder / WEIGHTS_FILE)
        identifying.append(folder / WEIGHTS_FILE)
    else:
        identifying.extend(models)
    return identifying, record


def load_trained(folder: Path, device: str = "cpu") -> tuple[PolicyRecord, dict[int, Policy]]:
    """`policy.json` of a trained partition and its policies by training seed."""
    path = folder / POLICY_FILE
    if not path.is_file():
        raise ValueError(f"no trained policy at {path}; materialize trained_policies first")
    record: PolicyRecord = json.loads(path.read_text())
    policies = {
        int(seed): load_policy(record["tier"], folder / name, device=device)
        for seed, name in record["models"].items()
    }
    return record, policies


def probe_observations(spec: MarketSpec, alpha: float, probes: int) -> list[np.ndarray]:
    """`probes` market observations at `alpha`: a rollout of uniformly random actions (env and
    actions seeded 0), so the probes have the layout and laws of real observations."""
    env = make_env(spec, alpha, robust=False, max_episode_steps=probes)
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)
    observations = [obs]
    while len(observations) < probes:
        obs, *_ = env.step(env.action_space.sample())
        observations.append(obs)
    return observations


def reload_mismatches(
    spec: MarketSpec,
    alpha: float,
    trained: list[TrainedPolicy],
    folder: Path,
    device: str = "cpu",
    probes: int = RELOAD_PROBES,
) -> list[int]:
    """Training seeds whose saved model, reloaded from `folder`, acts unlike the trained policy
    on the `probe_observations` of the market at `alpha` (fed in order after a `reset`)."""
    observations = probe_observations(spec, alpha, probes)
    _, loaded = load_trained(folder, device)
    mismatched = []
    for t in trained:  # a handful of seeds
        t.policy.reset()
        loaded[t.seed].reset()
        expected = [t.policy.act(o) for o in observations]
        if [loaded[t.seed].act(o) for o in observations] != expected:
            mismatched.append(t.seed)
    return mismatched
