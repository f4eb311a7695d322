"""Resource *types* of the Dagster layer: storage, the Hub, experiment tracking.

Their values are configured by the top floor (its resources module, the only module
that reads the environment); assets only declare which resources they need.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import dagster as dg
from pydantic import Field

from phantom_assets.assets.config_types import config_class
from phantom_assets.config import Settings, settings_from_dict
from phantom_assets.publish.hub import DEFAULT_BRANCH
from phantom_assets.reads import not_recorded


class StorageResource(config_class(Settings, base=dg.ConfigurableResource)):
    """The storage root and the settings every asset reads and writes through: one typed field
    per setting, nested by section like the TOML file (`[fingerprint] kappa` is
    `fingerprint.kappa`), each with its description and default. The top floor configures it
    with the settings it resolved (`of`), so a run computes with exactly those; a launchpad edit
    changes them for that run only."""

    @classmethod
    def of(cls, settings: Settings) -> StorageResource:
        """The resource holding `settings` (storage root made absolute) as the defaults of its
        fields: the launchpad shows them, and a run config that sets some keeps the others."""
        rooted = dataclasses.replace(settings, data_dir=settings.data_dir.resolve())
        return config_class(Settings, base=cls, defaults=rooted, name=cls.__name__)()

    def settings(self) -> Settings:
        """The typed settings of this resource, rooted at `data_dir` (made absolute). Building them
        reads no setting: what a body reads is what it does with them afterwards."""
        with not_recorded():
            settings = settings_from_dict(self.model_dump())
            return dataclasses.replace(settings, data_dir=settings.data_dir.resolve())


class HubResource(dg.ConfigurableResource):
    """Where `hf_dataset` publishes. Without a token or repo id every publish is a dry run.

    The token is configured as `dg.EnvVar("HF_TOKEN")`, so the UI shows the variable's name,
    never its value. `private` (default True: the sessions hold user agents and session ids)
    is what a new repo is created as; `revision` is the branch committed to (created if
    missing). A run's `PublishConfig` can override both (`phantom publish --public
    --revision BRANCH`).
    """

    repo_id: str | None = Field(
        default=None, description="Hub dataset repo, `org/name` (`PHANTOM_HF_REPO`)."
    )
    token: str | None = Field(default=None, description="Hub token (`HF_TOKEN`; never shown).")
    endpoint: str | None = Field(
        default=None, description="Hub endpoint, for a mirror or a test server (`HF_ENDPOINT`)."
    )
    private: bool = Field(default=True, description="Create a new repo private.")
    revision: str = Field(default=DEFAULT_BRANCH, description="Branch to commit to.")


class ExperimentTrackingResource(dg.ConfigurableResource):
    """Optional Weights & Biases tracking of training runs (`mode=None`: off, nothing imported).

    `offline` writes run directories under `run_dir` without an account; `online` needs an API
    key, configured as `dg.EnvVar("WANDB_API_KEY")` so the UI never shows its value.
    """

    mode: str | None = Field(
        default=None, description='"offline", "online" or unset (no tracking, `WANDB_MODE`).'
    )
    project: str = Field(default="phantom", description="W&B project (`WANDB_PROJECT`).")
    entity: str | None = Field(default=None, description="W&B entity (`WANDB_ENTITY`).")
    api_key: str | None = Field(
        default=None, description="W&B API key of online tracking (`WANDB_API_KEY`; never shown)."
    )
    run_dir: str | None = Field(
        default=None, description="Folder of the run directories (`WANDB_DIR`)."
    )

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
