"""Trained policies, policy evaluations and benchmark curves of the session's built pipeline
(`phantom run` on the tiny config: every policy partition of the demo grid -- the ablation tier
in all four λ × adversary modes -- trained on a tiny budget and evaluated, then each store's
benchmark); tests that re-materialize work on a private copy.
"""

import itertools
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl
import pytest

from orchestration.definitions import build_definitions
from orchestration.resources import ExperimentTrackingResource, tracking_from_env
from orchestration.scale_out.demo import TRAINING_OVERRIDES
from phantom_assets.assets.partitions import policy_grid
from phantom_assets.config import Settings, load_settings
from phantom_assets.evaluation import CURVE_SCHEMA, EPISODE_METRICS
from phantom_assets.lake import ORACLE_FILE, POLICY_FILE, REGRET_FILE, Lake
from phantom_assets.market import MarketSpec
from phantom_assets.market.columns import Column
from phantom_assets.market.oracle import action_totals
from phantom_assets.policies import (
    ABLATION_MODES,
    HEURISTIC_MODE,
    HEURISTIC_TIERS,
    LEARNABLE_TIERS,
    MODES,
    PLATEAU_TOLERANCE,
    TRAINING_MODES,
    TrainingParams,
    baseline_twin,
    model_file,
    parse_policy_key,
)
from tests.built_pipeline import BuiltPipeline
from tests.unit.policies.wandb_files import offline_runs, read_offline_run

STORE = "hotel"
EVAL_ALPHAS = (0.0, 0.5, 1.0)
TINY_TRAINING = TRAINING_OVERRIDES  # the scale-out demo's tiny budgets: one definition
DEFENSE = ["trained_policies", "policy_evaluations"]
STAGE_JOBS = ("defense_evaluation_job", "evaluation_audit_job")


@dataclass
class Built:
    pipeline: BuiltPipeline
    instance: dg.DagsterInstance
    defs: dg.Definitions

    @property
    def settings(self) -> Settings:
        return self.pipeline.settings

    @property
    def lake(self) -> Lake:
        return self.settings.lake

    @property
    def grid(self) -> tuple[str, ...]:
        return policy_grid(self.settings)

    def materialize(self, key: str, selection=DEFENSE, config=None, **resources):
        partition = dg.MultiPartitionKey({"store": STORE, "policy": key})
        run_config = {"ops": {"trained_policies": {"config": config}}} if config else None
        return dg.materialize(
            list(self.defs.assets or []),
            selection=selection,
            partition_key=partition,
            instance=self.instance,
            resources={**self.defs.resources, **resources},
            run_config=run_config,
            raise_on_error=False,
        )

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


def _built(pipeline: BuiltPipeline) -> Iterator[Built]:
    with pipeline.instance() as instance:
        yield Built(pipeline, instance, build_definitions(pipeline.settings))


@pytest.fixture(scope="module")
def built(built_pipeline: BuiltPipeline) -> Iterator[Built]:
    """The shared build, read only."""
    yield from _built(built_pipeline)


@pytest.fixture(scope="module")
def writable(built_pipeline: BuiltPipeline, tmp_path_factory) -> Iterator[Built]:
    """A private copy of the build for tests that materialize again."""
    yield from _built(built_pipeline.copy_to(tmp_path_factory.mktemp("defense")))


def _check_results(built: Built) -> dict[str, list[bool]]:
    """Every check evaluation of the training, evaluation and benchmark runs, by check name."""
    results: dict[str, list[bool]] = {}
    runs = built.instance.get_runs(dg.RunsFilter(job_name=STAGE_JOBS[0])) + built.instance.get_runs(
        dg.RunsFilter(job_name=STAGE_JOBS[1])
    )
    assert runs
    for run_id in (run.run_id for run in runs):
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
        assert alphas == (sorted(settings.agents.train_alphas) if learns else []), (tier, mode)


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
    net_arch = TrainingParams.from_config(built.settings.training).net_arch
    assert hyper["policy_kwargs"] == {"net_arch": list(net_arch)}
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
def test_rematerializing_a_policy_reproduces_its_weights_and_evaluations(writable: Built, key: str):
    built = writable
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
        cells = [
            set(f.select("alpha", "k", "detector", "seed").iter_rows()) for f in (defended, nominal)
        ]
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


@pytest.mark.parametrize(
    ("key", "live_metric"),
    [("qtable-baseline-a050", "rollout/ep_rew"), ("ppo-robust-a050", "train/loss")],
)
def test_offline_tracking_logs_training_live_and_puts_the_run_directory_in_the_metadata(
    writable: Built,
    offline_tracking: ExperimentTrackingResource,
    tmp_path: Path,
    key: str,
    live_metric: str,
):
    built = writable
    # The tiny budgets: PPO's 32-step rollouts update (and log train/) within 96 steps.
    assert built.materialize(key, selection=["trained_policies"], config=TINY_TRAINING).success
    before = built.data_version("trained_policies", key)
    result = built.materialize(
        key,
        selection=["trained_policies"],
        config=TINY_TRAINING,
        experiment_tracking=offline_tracking,
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
    writable: Built, offline_tracking: ExperimentTrackingResource, tmp_path: Path
):
    # PPO normalises advantages, so SB3 refuses a one-step rollout when the model is built,
    # which happens inside the run.
    result = writable.materialize(
        "ppo-baseline-a050",
        selection=["trained_policies"],
        config={**TINY_TRAINING, "ppo_n_steps": 1},
        experiment_tracking=offline_tracking,
    )
    assert not result.success
    (directory,) = offline_runs(tmp_path)
    assert read_offline_run(directory).exit_code == 1


def test_a_grid_with_a_candidates_evaluation_missing_is_not_certified_and_says_which(
    writable: Built, tmp_path: Path
):
    # Research scale (issue 25): the best candidate may be the one whose evaluation is missing.
    missing = "ppo-robust-a050"
    folder = writable.lake.evaluation_dir(STORE, missing)
    aside = tmp_path / "aside"  # outside the lake: no `policy=*` pattern may still read it
    shutil.move(folder, aside)
    try:
        result = dg.materialize(
            list(writable.defs.assets or []),
            selection=["certification_report"],
            partition_key=STORE,
            instance=writable.instance,
            resources=writable.defs.resources,
        )
    finally:
        shutil.move(aside, folder)  # later tests of the copy see the whole grid again
    assert result.success
    report = json.loads(writable.lake.certification_report(STORE).read_text())
    assert not report["certified"]
    assert report["gate"]["missing_evaluations"] == [missing]
    assert missing in report["gate"]["candidate_set"]
    reason = f"policy_evaluations [{STORE}|{missing}]: missing (never materialized or failed)"
    assert any(reason in line for line in report["reasons"]), report["reasons"]


def test_regret_is_measured_against_the_oracle_table_of_the_build(built: Built):
    # Why: `benchmark_curves` given the tuned-static action as "the oracle" survived every test.
    spec = MarketSpec.load(built.lake.market_dir(STORE), built.settings.agents)
    oracle = pl.read_parquet(built.lake.oracle_dir(STORE) / ORACLE_FILE)
    regret = pl.read_parquet(built.lake.benchmark_dir(STORE) / REGRET_FILE)
    seeds = built.settings.evaluation.selection_seeds
    for cell in oracle.iter_rows(named=True):
        action = (cell["level"], cell["markup"], cell["delta"])
        totals = action_totals(spec, [action], [cell["alpha"]], cell["k"], seeds)
        expected = float(np.mean(totals[0, :, 0, Column.PROFIT]))
        rows = regret.filter(pl.col("alpha") == cell["alpha"], pl.col("k") == cell["k"])
        assert sorted(rows["policy"]) == sorted(built.grid)
        np.testing.assert_allclose(rows["oracle_profit"], expected, rtol=1e-9)
    # Each policy's side is its own fitted-detector profit: training seeds, then seeds averaged.
    for key in built.grid:
        own = (
            built.nominal(key)
            .filter(pl.col("detector") == "fitted")
            .group_by("alpha", "k", "seed")
            .agg(pl.col("profit").mean())
            .group_by("alpha", "k")
            .agg(pl.col("profit").mean().alias("own"))
        )
        paired = regret.filter(pl.col("policy") == key).join(own, on=["alpha", "k"])
        assert paired.height == oracle.height
        np.testing.assert_allclose(paired["profit"], paired["own"], rtol=1e-9)
        np.testing.assert_allclose(
            paired["regret"], paired["oracle_profit"] - paired["own"], rtol=1e-9, atol=1e-6
        )


def test_the_certificates_baseline_numbers_are_tuned_statics_own_held_out_rows(built: Built):
    # Why: a certificate whose baseline was the static engine was caught only by a name check.
    report = json.loads(built.lake.certification_report(STORE).read_text())
    gate = report["gate"]
    (tuned,) = [key for key in built.grid if parse_policy_key(key).tier == "tuned"]
    profit = next(c for c in gate["comparisons"] if c["role"].startswith("profit vs the best"))
    cells = pl.DataFrame(profit["compared_at"])
    assert set(cells["theta"]) <= set(gate["evasion_thetas"]) and 0.25 in gate["evasion_thetas"]

    def held_out(policy: str) -> pl.DataFrame:
        """Per held-out seed: profit at the compared (α, θ) of each α0 cell, training seeds then
        α0 cells averaged."""
        stress = pl.read_parquet(built.lake.evaluation_dir(STORE, policy) / "stress.parquet")
        return (
            stress.filter(pl.col("split") == "test", pl.col("detector") == "fitted")
            .join(cells, on=["alpha0", "alpha", "theta"])
            .group_by("alpha0", "seed")
            .agg(pl.col("profit").mean())
            .group_by("seed")
            .agg(pl.col("profit").mean())
        )

    paired = held_out(gate["candidate"]).join(held_out(tuned), on="seed", suffix="_tuned")
    assert sorted(paired["seed"]) == list(built.settings.evaluation.test_seeds)
    assert profit["n"] == paired.height
    expected = float((paired["profit"] - paired["profit_tuned"]).mean())
    assert profit["mean"] == pytest.approx(expected, rel=1e-9)
    assert gate["baseline"] == tuned
