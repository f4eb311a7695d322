"""Declarative automation: what rebuilds by itself, and when (docs/architecture.md#automation).

An asset is requested only when something it computes from actually changed: an input's *data
version* (not merely a new materialization of it) or its own code version (settings included),
and only once every blocking check of its inputs passed. A new export for one store therefore
re-materializes the warehouse and the stores' `labeled_sessions`; the other store's sessions come
out with the same data version, so nothing of that store downstream runs. Cheap assets rebuild on
the next tick; training, evaluation and benchmarks wait for a cron tick, so a burst of new files
causes one retrain. Nothing runs while the automation sensor is stopped (its default): switch it
on in the UI under Automation.
"""

import dagster as dg

AC = dg.AutomationCondition
# Publishing stays manual (`phantom publish` or the UI): a Hub commit is a decision, not a reflex.
CHEAP_GROUPS = ("warehouse", "fingerprint", "contamination", "market", "audit")
EXPENSIVE_GROUPS = ("defense", "evaluation")
RETRAIN_CRON = "0 * * * *"  # hourly: a burst of batches within the hour causes one retrain

# Something this asset computes from changed since it was last requested or updated.
inputs_or_code_changed = (
    AC.newly_missing() | AC.any_deps_match(AC.data_version_changed()) | AC.code_version_changed()
).since_last_handled()
# Never compute from an input that is missing, being rebuilt, or failed a blocking check.
inputs_ready = (
    ~AC.any_deps_missing()
    & ~AC.any_deps_in_progress()
    & ~AC.in_progress()
    & AC.all_deps_blocking_checks_passed()
)
rebuild_on_change = (inputs_or_code_changed & inputs_ready).with_label(
    "on change (input data version or code version)"
)
rebuild_on_cron = (
    inputs_or_code_changed & AC.cron_tick_passed(RETRAIN_CRON).since_last_handled() & inputs_ready
).with_label(f"on change, at the next {RETRAIN_CRON!r} tick")

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
