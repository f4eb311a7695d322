"""Optional Weights & Biases run around a training call; a no-op unless explicitly enabled."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def wandb_run(
    config: dict[str, Any], *, enabled: bool = False, project: str = "phantom", **init: Any
) -> Iterator[Any]:
    """Yield a W&B run (``enabled=True``) or None; wandb is imported only when enabled.

    Args:
        config: run configuration (hyperparameters, seed, policy key).
        enabled: start a run only when True.
        project: W&B project name.
        **init: further ``wandb.init`` keyword arguments (e.g. ``mode="offline"``).
    """
    if not enabled:
        yield None
        return
    import wandb

    run = wandb.init(project=project, config=config, **init)
    try:
        yield run
    finally:
        run.finish()
