"""The optional W&B hook is a no-op unless enabled."""

from __future__ import annotations

import sys

from phantom_assets.policies import wandb_run


def test_wandb_run_is_a_no_op_when_disabled():
    already = "wandb" in sys.modules
    with wandb_run({"seed": 1}) as run:
        assert run is None
    assert ("wandb" in sys.modules) == already
