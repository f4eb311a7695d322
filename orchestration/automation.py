"""Declarative automation: what rebuilds by itself, and when (DESIGN §6).

Cheap assets rebuild eagerly when an input's data version or their own code version changes.
Expensive ones (training, evaluation, benchmarks) wait for a cron tick, so a burst of new files
causes one retrain. Nothing runs while the automation sensor is stopped (its default): switch it
on in the UI under Automation.
"""

import dagster as dg

CHEAP_GROUPS = ("warehouse", "fingerprint", "contamination", "market", "publish", "audit")
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


def _with_condition(condition: dg.AutomationCondition):
    return lambda spec: spec.replace_attributes(automation_condition=condition)


def with_automation(defs: dg.Definitions) -> dg.Definitions:
    """Attach the automation conditions by group (assets stay free of scheduling policy)."""
    groups = {spec.group_name for spec in _all_specs(defs)}
    for group_names, condition in (
        (CHEAP_GROUPS, rebuild_on_change),
        (EXPENSIVE_GROUPS, rebuild_on_cron),
    ):
        present = [g for g in group_names if g in groups]
        if present:
            defs = defs.map_resolved_asset_specs(
                func=_with_condition(condition), selection=dg.AssetSelection.groups(*present)
            )
    return defs


def _all_specs(defs: dg.Definitions) -> list[dg.AssetSpec]:
    return [
        spec
        for asset in defs.assets or []
        if isinstance(asset, dg.AssetsDefinition)
        for spec in asset.specs
    ]
