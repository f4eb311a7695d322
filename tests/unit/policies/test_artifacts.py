"""The saved form of a trained partition: file names, weights digest, record, reload check."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from phantom_assets.lake import CURVE_FILE, POLICY_FILE, WEIGHTS_FILE
from phantom_assets.market import make_env
from phantom_assets.policies import (
    StaticPolicy,
    TrainedPolicy,
    load_trained,
    model_file,
    policy_weights,
    reload_mismatches,
    save_trained,
    train_policy,
    weights_digest,
    worst_plateau_ratio,
)
from phantom_assets.policies.artifacts import policy_record, probe_observations


@pytest.mark.parametrize(
    ("tier", "seed", "name"),
    [("static", 0, "model-s0.json"), ("qtable", 3, "model-s3.npz"), ("ppo", 1, "model-s1.zip")],
)
def test_model_file_names_the_seed_and_keeps_the_tiers_suffix(tier, seed, name):
    assert model_file(tier, seed) == name


def test_weights_digest_ignores_insertion_order_but_sees_dtype_and_shape():
    a, b = np.arange(6, dtype=np.float32), np.ones((2, 2))
    assert weights_digest({"a": a, "b": b}) == weights_digest({"b": b, "a": a})
    assert weights_digest({"a": a}) != weights_digest({"a": a.astype(np.float64)})
    assert weights_digest({"a": a}) != weights_digest({"a": a.reshape(2, 3)})


@pytest.mark.parametrize(
    ("tier", "mode"), [("static", None), ("surge", None), ("qtable", "robust")]
)
def test_saved_partition_reloads_identically_and_is_identified_by_its_model_files(
    tmp_path, spec, tiny, tier, mode
):
    trained = [train_policy(tier, mode, spec, 0.5, tiny, seed) for seed in (0, 1)]
    identifying, record = save_trained(tmp_path, trained)
    assert json.loads((tmp_path / POLICY_FILE).read_text()) == record
    assert record["seeds"] == [0, 1] and record["models"] == {
        "0": model_file(tier, 0),
        "1": model_file(tier, 1),
    }
    assert identifying == [tmp_path / POLICY_FILE, tmp_path / CURVE_FILE] + [
        tmp_path / model_file(tier, s) for s in (0, 1)
    ]
    loaded_record, policies = load_trained(tmp_path)
    assert loaded_record == record and sorted(policies) == [0, 1]
    assert reload_mismatches(spec, 0.5, trained, tmp_path) == []
    learns = tier not in ("static", "surge")
    assert all((ratio is not None) == learns for ratio in record["plateau_ratios"].values())
    assert record["plateau_ratios"].keys() == {"0", "1"}


def test_sb3_partition_is_identified_by_its_weights_not_its_zip(tmp_path, spec, tiny):
    trained = [train_policy("ppo", "baseline", spec, 0.0, tiny, seed=0)]
    identifying, record = save_trained(tmp_path, trained)
    assert identifying == [tmp_path / POLICY_FILE, tmp_path / CURVE_FILE, tmp_path / WEIGHTS_FILE]
    assert (tmp_path / model_file("ppo", 0)).is_file()
    stored = dict(np.load(tmp_path / WEIGHTS_FILE))
    weights = policy_weights(trained[0].policy)
    assert stored.keys() == {f"s0__{name}" for name in weights}
    assert record["weights_sha256"] == weights_digest({f"s0/{k}": v for k, v in weights.items()})


def test_the_plateau_ratio_of_each_seed_is_recorded(tmp_path, spec, tiny):
    trained = [train_policy("qtable", "baseline", spec, 0.5, tiny, seed) for seed in (0, 1)]
    _, record = save_trained(tmp_path, trained)
    assert record["plateau_ratios"] == {str(t.seed): t.plateau_ratio for t in trained}
    assert all(np.isfinite(t.plateau_ratio) for t in trained)


@pytest.mark.parametrize(
    ("ratios", "worst"),
    [({"0": 1.01, "1": 0.97, "2": 1.02}, 0.97), ({"0": None}, None), ({"0": 1.0, "1": None}, 1.0)],
)
def test_the_worst_plateau_ratio_is_the_seed_farthest_from_flat(ratios, worst):
    assert worst_plateau_ratio({"plateau_ratios": ratios}) == worst


def test_the_same_configuration_under_another_key_gets_the_same_config_hash():
    trained = TrainedPolicy(StaticPolicy(4), "static", "heuristic", 0.0, seed=0)
    elsewhere = dataclasses.replace(trained, alpha=1.0)
    records = [policy_record([t], {}) for t in (trained, elsewhere)]
    assert records[0]["config_hash"] == records[1]["config_hash"]
    other = policy_record([dataclasses.replace(trained, seed=1)], {})
    assert other["config_hash"] != records[0]["config_hash"]


def test_reload_check_names_the_seed_whose_saved_model_acts_differently(tmp_path, spec):
    saved = TrainedPolicy(StaticPolicy(2), "static", "heuristic", 0.0, seed=5)
    save_trained(tmp_path, [saved])
    changed = dataclasses.replace(saved, policy=StaticPolicy(3))
    assert reload_mismatches(spec, 0.0, [changed], tmp_path, probes=4) == [5]


def test_reload_probes_are_market_observations_of_a_random_rollout(spec):
    probes = probe_observations(spec, 0.5, 12)
    assert len(probes) == 12 and all(make_env(spec).observation_space.contains(o) for o in probes)
    n = spec.n_products
    assert all(o[:n].sum() == pytest.approx(1.0, abs=1e-5) for o in probes)  # demand shares
    assert len({round(float(o[n : 2 * n].mean()), 6) for o in probes}) > 1  # the level moves
    assert np.array_equal(np.stack(probes), np.stack(probe_observations(spec, 0.5, 12)))


def test_loading_a_folder_without_a_record_says_what_to_materialize(tmp_path):
    with pytest.raises(ValueError, match="materialize trained_policies"):
        load_trained(tmp_path)
