"""Resources -- and the ONLY module that reads the environment.

`PHANTOM_PROFILE` (demo|study), `PHANTOM_DATA_DIR` (storage root, default `<repo>/data`) and
`PHANTOM_CONFIG` (optional TOML file) select the settings; everything else receives them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dagster as dg
from dagster_dbt import DbtCliResource
from dagster_duckdb import DuckDBResource

from phantom_assets.assets.dbt_project import phantom_dbt_project
from phantom_assets.config import DEFAULT_PROFILE, Settings, load_settings

REPO_ROOT = Path(__file__).resolve().parents[1]


class StorageResource(dg.ConfigurableResource):
    """The storage root and profile every asset reads and writes through."""

    data_dir: str
    profile: str = DEFAULT_PROFILE
    config_file: str | None = None

    def settings(self) -> Settings:
        """The typed settings for this root and profile."""
        return load_settings(self.profile, Path(self.data_dir).resolve(), self.config_file)


class HubResource(dg.ConfigurableResource):
    """Where `hf_dataset` publishes. Without a token or repo id every publish is a dry run.

    The token is configured as `dg.EnvVar("HF_TOKEN")`, so the UI shows the variable's name,
    never its value.
    """

    repo_id: str | None = None
    token: str | None = None
    endpoint: str | None = None


def hub_from_env() -> HubResource:
    """`PHANTOM_HF_REPO`, `HF_TOKEN` and (for tests or mirrors) `HF_ENDPOINT`."""
    return HubResource(
        repo_id=os.environ.get("PHANTOM_HF_REPO") or None,
        token=dg.EnvVar("HF_TOKEN") if os.environ.get("HF_TOKEN") else None,
        endpoint=os.environ.get("HF_ENDPOINT") or None,
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
    """The resource dict for `settings`: storage, warehouse (DuckDB), dbt and the Hub."""
    return {
        "storage": StorageResource(
            data_dir=str(settings.data_dir.resolve()),
            profile=settings.profile,
            config_file=os.environ.get("PHANTOM_CONFIG") or None,
        ),
        "warehouse": DuckDBResource(database=str(settings.warehouse_path.resolve())),
        "hub": hub_from_env(),
        # The dbt beside this interpreter: works whether or not the virtualenv is on PATH.
        "dbt": DbtCliResource(
            project_dir=phantom_dbt_project, dbt_executable=str(Path(sys.executable).parent / "dbt")
        ),
    }


def dagster_home_from_env() -> Path:
    """DAGSTER_HOME, defaulting to `<repo>/.dagster_home` so run history persists per checkout."""
    return Path(os.environ.get("DAGSTER_HOME", REPO_ROOT / ".dagster_home")).resolve()
