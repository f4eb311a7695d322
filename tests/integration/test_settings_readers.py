"""Which assets read which setting: changing any setting changes the code version of exactly the
assets that compute with it (docs/architecture.md#code-versions-and-data-versions).

Every field of every settings section is changed on its own, the demo graph rebuilt, and the assets
whose code version moved compared with `EXPECTED_READERS`, a reviewed table. What an asset hashes
is what it declares it reads (`assets.declared`), and every run holds its body to that: a field it
reads outside its declaration fails the run (`tests/unit/test_declared_assets.py`; the tiny build
runs every asset). So a field an asset reads but its code version forgets (found by this table
before: `training.envs` did not mark `trained_policies` stale) can no longer pass a run; a field
declared where it is not needed shows up here as an extra reader. `hf_dataset` and
`certification_report` record the whole configuration, so every field moves them. The simulation
settings move no other asset: they shape the demo files, whose content the data versions carry.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from phantom_assets.assets.graph import build_assets
from phantom_assets.config import Settings, load_settings

# Where, not what: the data root and the profile name (whose defaults the other fields carry).
NOT_LOGIC = ("profile", "data_dir")
EVERY_FIELD_READERS = {"hf_dataset", "hf_detector", "certification_report"}
# A valid other value of each field whose values are names.
ALTERNATIVES: dict[str, Any] = {
    "train_law": "grid",
    "calibration": "logistic",
    "bank": "kernel",
    "detector": "kernel",
    "agent_valuation": "human_unengaged",
    "device": "cuda",
    "ablation_tier": "ppo",
    "evasion_band": 0.5,  # one of the swept evasion shares
    "sensitivity_agent_valuations": ("agent_fit",),
    "tiers": ("static", "tuned", "defended", "surge", "linear", "qtable", "dqn"),
}

EXPECTED_READERS: dict[str, tuple[str, ...]] = {
    "simulation.seed": (),
    "simulation.humans_per_store": (),
    "simulation.agents_per_store": (),
    "simulation.separability": (),
    "simulation.price_test_arms": (),
    "simulation.engagement_slope": (),
    "simulation.agents_search_before_buying": (),
    "agents.alpha_grid": (
        "benchmark_curves",
        "coi_erosion",
        "contaminated_datasets",
        "market_oracle",
        "market_sensitivity",
        "market_simulators",
        "policy_evaluations",
        "trained_policies",
    ),
    "agents.train_alphas": ("benchmark_curves",),
    "agents.train_alpha_radius": ("trained_policies",),
    "agents.train_law": ("trained_policies",),
    "agents.nominal_k": (
        "coi_erosion",
        "market_oracle",
        "market_sensitivity",
        "market_simulators",
        "policy_evaluations",
        "trained_policies",
    ),
    "agents.k_grid": (
        "benchmark_curves",
        "market_oracle",
        "policy_evaluations",
        "trained_policies",
    ),
    "agents.erosion_k_grid": ("coi_erosion",),
    "agents.evasion_thetas": (
        "market_oracle",
        "market_sensitivity",
        "market_simulators",
        "policy_evaluations",
    ),
    "agents.evasion_band": ("market_sensitivity", "policy_evaluations"),
    "agents.robust_k_set": ("market_simulators", "trained_policies"),
    "agents.robust_alpha_candidates": ("market_simulators", "trained_policies"),
    "agents.ambiguity_radius_w1": ("market_simulators", "trained_policies"),
    "agents.stress_radius": (
        "market_oracle",
        "market_sensitivity",
        "market_simulators",
        "policy_evaluations",
    ),
    "fingerprint.kappa": ("transition_kernels",),
    "fingerprint.folds": ("labeled_sessions", "transition_kernels"),
    "fingerprint.temperature": ("divergence_scores",),
    "fingerprint.calibration": ("divergence_scores",),
    "fingerprint.max_prefix": ("divergence_scores",),
    "fingerprint.quote_prefix_events": ("quote_detector",),
    "fingerprint.bootstrap_draws": (
        "contaminated_datasets",
        "quote_detector",
        "separability_report",
    ),
    "fingerprint.permutation_draws": ("separability_report",),
    "fingerprint.seed": ("quote_detector", "separability_report"),
    "contamination.monotonic_tolerance": ("contaminated_datasets",),
    "contamination.seed": ("contaminated_datasets",),
    "market.bank": ("market_simulators",),
    "market.detector": ("market_simulators",),
    "market.shoppers_per_step": ("market_simulators",),
    "market.base_levels": ("market_simulators",),
    "market.markup_multiples": ("market_sensitivity", "market_simulators"),
    "market.detector_strengths": ("market_simulators",),
    "market.agent_valuation": ("market_simulators",),
    "market.valuation_sd": ("market_simulators",),
    "market.declared_in_market": ("market_simulators",),
    "market.store_replicates": ("market_simulators", "store_demand"),
    "market.min_price_variation": ("market_simulators", "store_demand"),
    "market.cost_share": ("market_simulators",),
    "market.price_cap": ("market_simulators",),
    "market.reference_engagement_share": ("market_simulators",),
    "market.detector_fpr": ("detector_bundle", "market_simulators", "quote_detector"),
    "market.engagement_scale_share": ("market_simulators", "store_demand", "store_prices"),
    "market.declared_markup": ("market_simulators", "store_prices"),
    "market.declared_quote_noise": ("market_simulators", "store_prices"),
    "market.declared_products": ("market_simulators",),
    "market.declared_anchor_range": ("market_simulators", "store_prices"),
    "market.sensitivity_cost_shares": ("market_sensitivity", "market_simulators"),
    "market.sensitivity_price_caps": ("market_sensitivity", "market_simulators"),
    "market.sensitivity_agent_valuations": ("market_sensitivity", "market_simulators"),
    "market.sensitivity_in_market": ("market_sensitivity", "market_simulators"),
    "market.sensitivity_engagement_scales": ("market_sensitivity", "market_simulators"),
    "market.lam": ("market_simulators",),
    "market.episode_steps": ("market_simulators",),
    "market.chain_bank_size": ("market_simulators",),
    "training.tiers": ("benchmark_curves",),
    "training.timesteps": ("trained_policies",),
    "training.seeds": ("trained_policies",),
    "training.device": ("policy_evaluations", "trained_policies"),
    "training.torch_threads": ("policy_evaluations", "trained_policies"),
    "training.envs": ("trained_policies",),
    "training.ablation_tier": ("benchmark_curves",),
    "training.ablation_lam": ("trained_policies",),
    "evaluation.episodes": (
        "benchmark_curves",
        "coi_erosion",
        "market_oracle",
        "market_sensitivity",
        "market_simulators",
        "policy_evaluations",
    ),
    "evaluation.test_episodes": ("market_oracle", "market_sensitivity", "policy_evaluations"),
    "evaluation.seed": (
        "coi_erosion",
        "market_oracle",
        "market_sensitivity",
        "market_simulators",
        "policy_evaluations",
    ),
    "evaluation.test_seed": ("market_oracle", "market_sensitivity", "policy_evaluations"),
    "evaluation.gate_candidates": (),
    "evaluation.max_human_harm": ("market_sensitivity",),
    "accept_legacy_store": (
        "contamination_agent_gaps",
        "contamination_event_times",
        "contamination_product_mix",
        "contamination_store_spans",
        "fingerprint_sessions",
        "int_events_deduplicated",
        "int_session_labels_resolved",
        "price_quote_events",
        "raw_events",
        "raw_events_quarantine",
        "session_labels",
        "sessions",
        "stg_events",
        "store_activity",
    ),
}


def _other(name: str, value: Any) -> Any:
    """Another valid value of setting `name`."""
    if name in ALTERNATIVES:
        return ALTERNATIVES[name]
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 0.9 if value else 0.01
    if isinstance(value, tuple):
        return (*value[:-1], _other(name, value[-1]))
    raise TypeError(f"no other value for setting {name} = {value!r}")


def _changed_settings(base: Settings) -> dict[str, Settings]:
    """`section.field` (or a top-level field) -> `base` with that one field changed."""
    out = {}
    for top in dataclasses.fields(base):
        value = getattr(base, top.name)
        if not dataclasses.is_dataclass(value):
            if top.name not in NOT_LOGIC:
                out[top.name] = dataclasses.replace(base, **{top.name: _other(top.name, value)})
            continue
        for field in dataclasses.fields(value):
            section = dataclasses.replace(
                value, **{field.name: _other(field.name, getattr(value, field.name))}
            )
            out[f"{top.name}.{field.name}"] = dataclasses.replace(base, **{top.name: section})
    return out


def _code_versions(settings: Settings) -> dict[str, str | None]:
    return {
        spec.key.to_user_string(): spec.code_version
        for asset in build_assets(settings)
        for spec in getattr(asset, "specs", ())
    }


@pytest.fixture(scope="module")
def readers() -> dict[str, set[str]]:
    """Setting -> the assets whose code version moves when it alone changes."""
    base = load_settings("demo")
    before = _code_versions(base)
    out = {}
    for name, settings in _changed_settings(base).items():
        after = _code_versions(settings)
        out[name] = {key for key, version in before.items() if after.get(key) != version}
    return out


def test_every_setting_is_in_the_reviewed_table(readers: dict[str, set[str]]):
    assert sorted(readers) == sorted(EXPECTED_READERS)


def test_changing_a_setting_changes_the_code_version_of_exactly_its_readers(
    readers: dict[str, set[str]],
):
    wrong = {
        name: {
            "missing": sorted(set(EXPECTED_READERS[name]) - moved - EVERY_FIELD_READERS),
            "extra": sorted(moved - set(EXPECTED_READERS[name]) - EVERY_FIELD_READERS),
        }
        for name, moved in readers.items()
        if moved - EVERY_FIELD_READERS != set(EXPECTED_READERS.get(name, ()))
    }
    assert not wrong, wrong
    assert all(EVERY_FIELD_READERS <= moved for moved in readers.values())
