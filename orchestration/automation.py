"""Declarative automation: what rebuilds by itself, and when (DESIGN §6).

Cheap assets rebuild eagerly when an input's data version or their own code version changes.
Expensive ones (training, evaluation, benchmarks) wait for a cron tick, so a burst of new files
causes one retrain. Nothing runs while the automation sensor is stopped (its default): switch it
on in the UI under Automation.
"""

import dagster as dg

# Publishing stays manual (`phantom publish` or the UI): a Hub commit is a decision, not a reflex.
CHEAP_GROUPS = ("warehouse", "fingerprint", "contamination", "market", "audit")
EXPENSIVE_GROUPS = ("defense", "evaluation")
RETRAIN_CRON = "0 * * * *"  # hourly: a burst of batches within the hour causes one retrain

rebuild_on_change = (
    dg.AutomationCondition.eager()
    | (
        dg.AutomationCondition.code_version_changed()
        & ~dg.AutomationCondition.any_deps_missing()
        & ~dg.AutomationCondition.in_progress()
    )
).with_label("eager (inputs or code changed)")
rebuild_on_cron = dg.AutomationCondition.on_cron(RETRAIN_CRON)

automation_sensor = dg.AutomationConditionSensorDefinition(
    "phantom_automation_sensor",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.STOPPED,
    minimum_interval_seconds=60,
    description="Evaluates every asset's automation condition (eager for cheap assets, an hourly "
    "cron for training and benchmarks).",
)


def condition_for(group_name: str | None) -> dg.AutomationCondition | None:
    """The automation condition of an asset group (None: only sensors and people start it)."""
    if group_name in CHEAP_GROUPS:
        return rebuild_on_change
    if group_name in EXPENSIVE_GROUPS:
        return rebuild_on_cron
    return None


def with_automation(assets: list) -> list:
    """Attach the automation conditions by group (assets stay free of scheduling policy)."""
    return [
        asset.map_asset_specs(
            lambda spec: spec.replace_attributes(
                automation_condition=condition_for(spec.group_name)
            )
        )
        if isinstance(asset, dg.AssetsDefinition)
        else asset
        for asset in assets
    ]
