"""Trained policies, policy evaluations and benchmark curves, materialized in process.

The upstream pipeline (through the market oracle) runs once per module on tiny simulated data
(hotel only downstream of the market), every policy partition of the demo grid — the ablation
tier in all four λ × adversary modes — trains on a tiny budget and is evaluated, then the store's
benchmark is built.
"""

import itertools
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from orchestration.resources import (
    ExperimentTrackingResource,
    StorageResource,
    build_resources,
    tracking_from_env,
)
from orchestration.runner import run_pipeline
from orchestration.scale_out.demo import TRAINING_OVERRIDES
from phantom_assets.assets.partitions import policy_grid
from phantom_assets.config import Settings, load_settings
from phantom_assets.evaluation import CURVE_SCHEMA, EPISODE_METRICS
from phantom_assets.lake import POLICY_FILE, Lake
from phantom_assets.policies import (
    ABLATION_MODES,
    HEURISTIC_MODE,
    HEURISTIC_TIERS,
    LEARNABLE_TIERS,
    MODES,
    PLATEAU_TOLERANCE,
    TRAINING_MODES,
    baseline_twin,
    model_file,
    parse_policy_key,
)
from phantom_assets.simulate import simulate_to_incoming
from tests.pipeline_helpers import DEMO_DEFS as defs
from tests.pipeline_helpers import TINY_CONFIG, simulation_params
from tests.unit.policies.wandb_files import offline_runs, read_offline_run

STORE = "hotel"
UPSTREAM = '+key:"market_oracle"'
EVAL_ALPHAS = (0.0, 0.5, 1.0)
TINY_TRAINING = TRAINING_OVERRIDES  # the scale-out demo's tiny budgets: one definition
DEFENSE = ["trained_policies", "policy_evaluations"]


@dataclass
class Built:
    settings: Settings
    instance: dg.DagsterInstance
    resources: dict[str, object]
    run_ids: list[str]
    wandb_imported: bool

    @property
    def lake(self) -> Lake:
        return self.settings.lake

    @property
    def grid(self) -> tuple[str, ...]:
        return policy_grid(self.settings)

    def materialize(self, key: str, selection=DEFENSE, **resources) -> dg.ExecuteInProcessResult:
        partition = dg.MultiPartitionKey({"store": STORE, "policy": key})
        config = {"ops": {"trained_policies": {"config": TINY_TRAINING}}}
        return dg.materialize(
            list(defs.assets or []), selection=selection, partition_key=partition,
            instance=self.instance, resources={**self.resources, **resources},
            run_config=config if "trained_policies" in selection else None,
        )  # fmt: skip

    def latest(self, asset: str, key: str) -> dg.AssetMaterialization:
        partition = dg.MultiPartitionKey({"store": STORE, "policy": key})
        records = self.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]),
            limit=1,
        ).records
        assert records and records[0].asset_materialization is not None
        return records[0].asset_materialization

    def data_version(self, asset: str, key: str) -> str:
        return self.latest(asset, key).tags["dagster/data_version"]

    def nominal(self, key: str) -> pl.DataFrame:
        return pl.read_parquet(self.lake.evaluation_dir(STORE, key) / "nominal.parquet")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("defense")
    config_file = root / "tiny.toml"
    config_file.write_text(TINY_CONFIG)
    settings = load_settings("demo", data_dir=root / "data", config_file=config_file)
    simulate_to_incoming(simulation_params(settings), settings.incoming_dir)
    storage = StorageResource(
        data_dir=str(settings.data_dir), profile="demo", config_file=str(config_file)
    )
    resources = {**build_resources(settings), "storage": storage,
                 "experiment_tracking": ExperimentTrackingResource()}  # fmt: skip
    wandb_before = "wandb" in sys.modules
    with dg.instance_for_test() as instance:
        report = run_pipeline(settings, instance, resources=resources, selection=UPSTREAM)
        assert not report.failed, report.failed
        built = Built(settings, instance, resources, [], wandb_imported=False)
        for key in policy_grid(settings):
            result = built.materialize(key)
            assert result.success, key
            built.run_ids.append(result.run_id)
        assets = list(defs.assets or [])
        bench = dg.materialize(
            assets, selection=["benchmark_curves"], partition_key=STORE, instance=instance,
            resources=resources,
        )  # fmt: skip
        assert bench.success
        built.run_ids.append(bench.run_id)
        built.wandb_imported = "wandb" in sys.modules and not wandb_before
        yield built


def _check_results(built: Built) -> dict[str, list[bool]]:
    results: dict[str, list[bool]] = {}
    for run_id in built.run_ids:
        for record in built.instance.all_logs(
            run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
        ):
            evaluation = record.dagster_event.event_specific_data
            results.setdefault(evaluation.check_name, []).append(evaluation.passed)
    return results


def expected_modes(settings: Settings) -> set[tuple[str, str]]:
    """(tier, mode) of every partition the settings' grid must hold."""
    training = settings.training
    modes = {(t, HEURISTIC_MODE) for t in training.tiers if t in HEURISTIC_TIERS}
    modes |= {(t, m) for t in training.tiers if t in LEARNABLE_TIERS for m in MODES}
    return modes | {(training.ablation_tier, m) for m in ABLATION_MODES}


def test_demo_policy_grid_holds_every_tier_and_mode_and_the_ablation_factorial():
    settings = load_settings("demo")
    parsed = [parse_policy_key(k) for k in policy_grid(settings)]
    assert {(p.tier, p.mode) for p in parsed} == expected_modes(settings)
    for tier, mode in itertools.product(settings.training.tiers, TRAINING_MODES):
        alphas = sorted(p.alpha for p in parsed if (p.tier, p.mode) == (tier, mode))
        learns = tier in LEARNABLE_TIERS and (
            mode in MODES or tier == settings.training.ablation_tier
        )
        assert alphas == (sorted(settings.training.train_alphas) if learns else []), (tier, mode)


def test_every_tier_and_mode_is_trained_saved_and_evaluated(built: Built):
    trained = set()
    for key in built.grid:
        folder = built.lake.policy_dir(STORE, key)
        record = json.loads((folder / POLICY_FILE).read_text())
        trained.add((record["tier"], record["mode"]))
        assert (folder / model_file(record["tier"], record["seed"])).is_file()
        assert (folder / "learning_curve.parquet").is_file()
        assert record["hyperparameters"] and record["seeds"] == [0]
        for name in ("nominal.parquet", "stress.parquet", "traces.parquet"):
            assert (built.lake.evaluation_dir(STORE, key) / name).is_file(), (key, name)
    assert trained == expected_modes(built.settings)


@pytest.mark.parametrize("key", ["ppo-robust-a050", "dqn-charged-a050", "dqn-robustcharged-a050"])
def test_training_metadata_lists_the_market_of_the_mode_artifacts_and_a_learning_curve_plot(
    built: Built, key: str
):
    metadata = built.latest("trained_policies", key).metadata
    mode = TRAINING_MODES[parse_policy_key(key).mode]
    lam = built.settings.training.ablation_lam if mode.charged else 0.0
    assert (metadata["robust"].value, metadata["lam"].value) == (mode.robust, lam)
    hyper = metadata["hyperparameters"].value
    assert (hyper["robust"], hyper["lam"]) == (mode.robust, lam)
    assert hyper["policy_kwargs"] == {"net_arch": [8]}
    artifacts = [Path(p) for p in metadata["artifacts"].value]
    assert {p.name for p in artifacts} == {POLICY_FILE, "learning_curve.parquet", "weights.npz"}
    assert all(p.is_file() for p in artifacts)
    record = json.loads((artifacts[0].parent / POLICY_FILE).read_text())
    ratio = record["plateau_ratios"]["0"]
    assert metadata["plateau_ratio"].value == pytest.approx(ratio)
    assert metadata["plateaued"].value == (abs(ratio - 1) <= PLATEAU_TOLERANCE)
    assert "data:image/png;base64" in metadata["learning_curve"].value
    png = built.settings.reports_dir / "trained_policies" / f"{STORE}-{key}.png"
    assert png.is_file()
    curve = pl.read_parquet(artifacts[0].parent / "learning_curve.parquet")
    assert curve.height > 0 and curve["timesteps"].is_sorted()


def test_heuristic_metadata_has_no_plateau_and_a_nominal_market(built: Built):
    metadata = built.latest("trained_policies", "static-a050").metadata
    assert metadata["plateau_ratio"].value is None and metadata["plateaued"].value is None
    assert (metadata["robust"].value, metadata["lam"].value) == (False, 0.0)


def test_every_asset_check_passed(built: Built):
    results = _check_results(built)
    assert "saved_policy_reloads_identically" in results
    assert {name: all(passed) for name, passed in results.items()} == dict.fromkeys(results, True)


@pytest.mark.parametrize("key", ["dqn-robustcharged-a050", "qtable-baseline-a050", "linear-a050"])
def test_rematerializing_a_policy_reproduces_its_weights_and_evaluations(built: Built, key: str):
    record_before = json.loads((built.lake.policy_dir(STORE, key) / POLICY_FILE).read_text())
    before = [built.data_version(asset, key) for asset in DEFENSE]
    assert built.materialize(key).success
    after = [built.data_version(asset, key) for asset in DEFENSE]
    record_after = json.loads((built.lake.policy_dir(STORE, key) / POLICY_FILE).read_text())
    assert after == before
    assert record_after["weights_sha256"] == record_before["weights_sha256"]


def test_robust_policies_and_their_nominal_twins_get_identical_nominal_episodes(built: Built):
    robust = [k for k in built.grid if baseline_twin(k) is not None]
    assert {parse_policy_key(k).mode for k in robust} == {"robust", "robustcharged"}
    for key in robust:
        twin = baseline_twin(key)
        assert twin in built.grid, key
        defended, nominal = built.nominal(key), built.nominal(twin)
        cells = [set(f.select("alpha", "k", "detector", "seed").iter_rows())
                 for f in (defended, nominal)]  # fmt: skip
        assert cells[0] == cells[1]
        assert sorted(set(defended["alpha"])) == list(EVAL_ALPHAS)


def test_benchmark_curves_cover_every_policy_alpha_and_metric_with_ordered_cis(built: Built):
    curves = pl.read_parquet(built.lake.benchmark_dir(STORE) / "curves.parquet")
    assert curves.schema == pl.Schema(CURVE_SCHEMA)
    assert set(curves["policy"]) == set(built.grid)
    assert sorted(set(curves["alpha"])) == list(EVAL_ALPHAS)
    assert set(EPISODE_METRICS) <= set(curves["metric"])
    assert (curves["ci_low"] <= curves["mean"] + 1e-9).all()
    assert (curves["mean"] <= curves["ci_high"] + 1e-9).all()
    assert set(curves["n"]) == {built.settings.evaluation.episodes}  # episode seeds, not rows


def test_training_without_tracking_configuration_never_imports_wandb(built: Built):
    assert not built.wandb_imported


def test_tracking_from_env_is_off_without_configuration_and_offline_with_wandb_mode(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_DIR", "WANDB_PROJECT", "WANDB_ENTITY"):
        monkeypatch.delenv(name, raising=False)
    assert not tracking_from_env().enabled
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    tracking = tracking_from_env()
    assert (tracking.mode, tracking.run_dir, tracking.api_key) == ("offline", str(tmp_path), None)


@pytest.fixture
def offline_tracking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ExperimentTrackingResource:
    """Offline W&B with its runs, config and cache under tmp (nothing in $HOME, nothing sent)."""
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    return ExperimentTrackingResource(mode="offline", run_dir=str(tmp_path))


@pytest.mark.parametrize(("key", "live_metric"), [("qtable-baseline-a050", "rollout/ep_rew"),
                                                  ("ppo-robust-a050", "train/loss")])  # fmt: skip
def test_offline_tracking_logs_training_live_and_puts_the_run_directory_in_the_metadata(
    built: Built, offline_tracking: ExperimentTrackingResource, tmp_path: Path, key: str,
    live_metric: str,
):  # fmt: skip
    before = built.data_version("trained_policies", key)
    result = built.materialize(
        key, selection=["trained_policies"], experiment_tracking=offline_tracking
    )
    assert result.success
    (directory,) = offline_runs(tmp_path)
    metadata = built.latest("trained_policies", key).metadata
    assert metadata["tracked"].value is True
    assert metadata["wandb_runs"].value == {"0": str(directory)}
    run = read_offline_run(directory)
    assert run.exit_code == 0
    assert run.metric(live_metric) and run.metric("time/total_timesteps")
    assert run.summary["hyperparameters"] == metadata["hyperparameters"].value
    assert built.data_version("trained_policies", key) == before  # tracking changes no bytes


def test_untracked_training_metadata_names_no_wandb_run(built: Built):
    metadata = built.latest("trained_policies", "ppo-baseline-a050").metadata
    assert metadata["tracked"].value is False and "wandb_runs" not in metadata


def test_a_training_that_raises_inside_its_run_fails_the_step_and_marks_the_run_failed(
    built: Built, offline_tracking: ExperimentTrackingResource, tmp_path: Path
):
    # PPO normalises advantages, so SB3 refuses a one-step rollout when the model is built,
    # which happens inside the run.
    partition = dg.MultiPartitionKey({"store": STORE, "policy": "ppo-baseline-a050"})
    config = {"ops": {"trained_policies": {"config": {**TINY_TRAINING, "ppo_n_steps": 1}}}}
    result = dg.materialize(
        list(defs.assets or []), selection=["trained_policies"], partition_key=partition,
        instance=built.instance, run_config=config, raise_on_error=False,
        resources={**built.resources, "experiment_tracking": offline_tracking},
    )  # fmt: skip
    assert not result.success
    (directory,) = offline_runs(tmp_path)
    assert read_offline_run(directory).exit_code == 1
