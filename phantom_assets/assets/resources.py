"""Resource *types* of the Dagster layer: storage, the Hub, experiment tracking.

Their values are configured by the top floor (its resources module, the only module
that reads the environment); assets only declare which resources they need.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import dagster as dg

from phantom_assets.config import DEFAULT_PROFILE, Settings, load_settings, settings_from_dict
from phantom_assets.publish.hub import DEFAULT_BRANCH


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


ASSET_GRAPH = "asset_graph"
"""Resource key of the code location's asset graph (what the certification audit walks)."""


def asset_graph_resource(defs: dg.Definitions | None = None) -> dg.ResourceDefinition:
    """The asset graph of `defs` as a resource; None: a placeholder, to resolve `defs` itself
    (a graph does not depend on resource values, only on which keys exist). The top floor
    builds it from the very definitions it serves, so the audit needs no graph module (an import
    circle) and no Dagster internals."""
    return dg.ResourceDefinition.hardcoded_resource(
        None if defs is None else defs.resolve_asset_graph(),
        description="The code location's asset graph: the lineage the certification audit walks.",
    )
