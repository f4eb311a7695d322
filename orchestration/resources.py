"""Resources -- and the ONLY module that reads the environment.

`PHANTOM_PROFILE` (demo|study), `PHANTOM_DATA_DIR` (storage root, default `<repo>/data`) and
`PHANTOM_CONFIG` (optional TOML file) select the settings; everything else receives them.
`WANDB_MODE` / `WANDB_API_KEY` (+ `WANDB_DIR`, `WANDB_PROJECT`, `WANDB_ENTITY`) switch on the
optional experiment tracking; without them nothing is sent and wandb is never imported.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import dagster as dg
from dagster_dbt import DbtCliResource
from dagster_duckdb import DuckDBResource

from phantom_assets.assets.dbt_project import phantom_dbt_project
from phantom_assets.config import DEFAULT_PROFILE, Settings, load_settings, settings_from_dict
from phantom_assets.publish.hub import DEFAULT_BRANCH

REPO_ROOT = Path(__file__).resolve().parents[1]


class StorageResource(dg.ConfigurableResource):
    """The storage root and settings every asset reads and writes through.

    `settings_json` (what `build_resources` passes) carries the complete settings, so a run
    computes with exactly the settings its launcher resolved; without it the profile and optional
    TOML file are loaded.
    """

    data_dir: str
    profile: str = DEFAULT_PROFILE
    config_file: str | None = None
    settings_json: str | None = None

    def settings(self) -> Settings:
        """The typed settings of this resource, rooted at `data_dir`."""
        root = Path(self.data_dir).resolve()
        if self.settings_json:
            return dataclasses.replace(
                settings_from_dict(json.loads(self.settings_json)), data_dir=root
            )
        return load_settings(self.profile, root, self.config_file)


class HubResource(dg.ConfigurableResource):
    """Where `hf_dataset` publishes. Without a token or repo id every publish is a dry run.

    The token is configured as `dg.EnvVar("HF_TOKEN")`, so the UI shows the variable's name,
    never its value. `private` (default True: the sessions hold user agents and session ids)
    is what a new repo is created as; `revision` is the branch committed to (created if
    missing). A run's `PublishConfig` can override both (`phantom publish --public
    --revision BRANCH`).
    """

    repo_id: str | None = None
    token: str | None = None
    endpoint: str | None = None
    private: bool = True
    revision: str = DEFAULT_BRANCH


def hub_from_env() -> HubResource:
    """`PHANTOM_HF_REPO`, `HF_TOKEN` and (for tests or mirrors) `HF_ENDPOINT`."""
    return HubResource(
        repo_id=os.environ.get("PHANTOM_HF_REPO") or None,
        token=dg.EnvVar("HF_TOKEN") if os.environ.get("HF_TOKEN") else None,
        endpoint=os.environ.get("HF_ENDPOINT") or None,
    )


class ExperimentTrackingResource(dg.ConfigurableResource):
    """Optional Weights & Biases tracking of training runs (`mode=None`: off, nothing imported).

    `offline` writes run directories under `run_dir` without an account; `online` needs an API
    key, configured as `dg.EnvVar("WANDB_API_KEY")` so the UI never shows its value.
    """

    mode: str | None = None
    project: str = "phantom"
    entity: str | None = None
    api_key: str | None = None
    run_dir: str | None = None

    @property
    def enabled(self) -> bool:
        """True when runs are tracked (offline or online)."""
        return self.mode is not None

    def init_kwargs(self) -> dict[str, object]:
        """Keyword arguments of `wandb.init` (the key goes to `wandb_run(api_key=...)`)."""
        if self.mode not in (None, "offline", "online"):
            raise ValueError(f"tracking mode must be 'offline', 'online' or None: {self.mode!r}")
        if self.run_dir:
            Path(self.run_dir).mkdir(parents=True, exist_ok=True)
        kwargs = {"mode": self.mode, "dir": self.run_dir, "entity": self.entity}
        return {k: v for k, v in kwargs.items() if v is not None}


def tracking_from_env() -> ExperimentTrackingResource:
    """Tracking as configured: `WANDB_MODE=offline`, or `WANDB_API_KEY` (online); else off."""
    mode = (os.environ.get("WANDB_MODE") or "").lower()
    has_key = bool(os.environ.get("WANDB_API_KEY"))
    if mode in ("offline", "dryrun"):
        selected: str | None = "offline"
    elif mode != "disabled" and has_key:
        selected = "online"
    else:
        selected = None
    return ExperimentTrackingResource(
        mode=selected,
        project=os.environ.get("WANDB_PROJECT") or "phantom",
        entity=os.environ.get("WANDB_ENTITY") or None,
        api_key=dg.EnvVar("WANDB_API_KEY") if selected == "online" else None,
        run_dir=os.environ.get("WANDB_DIR") or None,
    )


def settings_from_env() -> Settings:
    """Settings as selected by the environment (used by the CLI and the definitions)."""
    data_dir = Path(os.environ.get("PHANTOM_DATA_DIR", REPO_ROOT / "data")).resolve()
    return load_settings(
        os.environ.get("PHANTOM_PROFILE", DEFAULT_PROFILE),
        data_dir,
        os.environ.get("PHANTOM_CONFIG") or None,
    )


def build_resources(settings: Settings) -> dict[str, object]:
    """The resource dict for `settings`: storage, warehouse (DuckDB), dbt, the Hub and the
    optional experiment tracking."""
    return {
        "storage": StorageResource(
            data_dir=str(settings.data_dir.resolve()),
            profile=settings.profile,
            settings_json=json.dumps(settings.as_dict(), sort_keys=True),
        ),
        "warehouse": DuckDBResource(database=str(settings.warehouse_path.resolve())),
        "hub": hub_from_env(),
        "experiment_tracking": tracking_from_env(),
        # The dbt beside this interpreter: works whether or not the virtualenv is on PATH.
        "dbt": DbtCliResource(
            project_dir=phantom_dbt_project, dbt_executable=str(Path(sys.executable).parent / "dbt")
        ),
    }


def dagster_home_from_env() -> Path:
    """DAGSTER_HOME, defaulting to `<repo>/.dagster_home` so run history persists per checkout."""
    return Path(os.environ.get("DAGSTER_HOME", REPO_ROOT / ".dagster_home")).resolve()
