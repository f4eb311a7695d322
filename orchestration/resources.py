"""Resources -- and the ONLY module that reads the environment.

`PHANTOM_PROFILE` (demo|study), `PHANTOM_DATA_DIR` (storage root, default `./data`) and
`PHANTOM_CONFIG` (optional TOML file) select the settings; everything else receives them.
`WANDB_MODE` / `WANDB_API_KEY` (+ `WANDB_DIR`, `WANDB_PROJECT`, `WANDB_ENTITY`) switch on the
optional experiment tracking; without them nothing is sent and wandb is never imported.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dagster as dg
from dagster_dbt import DbtCliResource
from dagster_duckdb import DuckDBResource

from phantom_assets.assets.dbt_project import phantom_dbt_project
from phantom_assets.assets.resources import (
    ExperimentTrackingResource,
    HubResource,
    StorageResource,
)
from phantom_assets.config import DEFAULT_PROFILE, Settings, load_settings

# The instance template `phantom` copies into a new DAGSTER_HOME (shipped with the package).
DAGSTER_YAML_TEMPLATE = Path(__file__).with_name("dagster.yaml")


def hub_from_env() -> HubResource:
    """`PHANTOM_HF_REPO`, `HF_TOKEN` and (for tests or mirrors) `HF_ENDPOINT`."""
    return HubResource(
        repo_id=os.environ.get("PHANTOM_HF_REPO") or None,
        token=dg.EnvVar("HF_TOKEN") if os.environ.get("HF_TOKEN") else None,
        endpoint=os.environ.get("HF_ENDPOINT") or None,
    )


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


def config_file_from_env() -> Path | None:
    """The TOML file `PHANTOM_CONFIG` names (None: the profile's own values)."""
    value = os.environ.get("PHANTOM_CONFIG")
    return Path(value).resolve() if value else None


def settings_from_env() -> Settings:
    """Settings as selected by the environment (used by the CLI and the definitions)."""
    data_dir = Path(os.environ.get("PHANTOM_DATA_DIR", "data")).resolve()
    return load_settings(
        os.environ.get("PHANTOM_PROFILE", DEFAULT_PROFILE), data_dir, config_file_from_env()
    )


def build_resources(settings: Settings) -> dict[str, object]:
    """The resource dict for `settings`: storage, warehouse (DuckDB), dbt, the Hub and the
    optional experiment tracking."""
    return {
        "storage": StorageResource.of(settings),
        "warehouse": DuckDBResource(database=str(settings.warehouse_path.resolve())),
        "hub": hub_from_env(),
        "experiment_tracking": tracking_from_env(),
        # The dbt beside this interpreter: works whether or not the virtualenv is on PATH.
        "dbt": DbtCliResource(
            project_dir=phantom_dbt_project, dbt_executable=str(Path(sys.executable).parent / "dbt")
        ),
    }


def phantom_environment(data_dir: Path, dagster_home: Path) -> dict[str, str]:
    """This environment, with the storage root and DAGSTER_HOME of a child `phantom` process."""
    return {**os.environ, "PHANTOM_DATA_DIR": str(data_dir), "DAGSTER_HOME": str(dagster_home)}


def dagster_home_from_env() -> Path:
    """DAGSTER_HOME, defaulting to `./.dagster_home` so run history persists per checkout."""
    return Path(os.environ.get("DAGSTER_HOME", ".dagster_home")).resolve()
