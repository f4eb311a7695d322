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
# Each tick advances the graph one run deep (a run holds assets of one partitioning), so the
# interval bounds how long a new file takes to reach the kernels.
AUTOMATION_INTERVAL_S = 30
RETRAIN_CRON = "0 * * * *"  # hourly: a burst of batches within the hour causes one retrain

AUTOMATED = dg.AssetSelection.groups(*CHEAP_GROUPS, *EXPENSIVE_GROUPS)

# Something this asset computes from changed since it was last requested or updated: an input's
# data version, its own code version, or an input rebuilt in this very tick that can run in the
# same run (the dbt models, a store's sessions and their kernels): then it joins that run instead
# of waiting for the next tick.
inputs_or_code_changed = (
    AC.newly_missing()
    | AC.any_deps_match(AC.data_version_changed() | AC.will_be_requested())
    | AC.code_version_changed()
).since_last_handled()
# An automated input that will itself be rebuilt first, in another run (its own inputs changed
# and it was not requested since): wait for its new version rather than run now and again after.
inputs_pending = AC.any_deps_match(inputs_or_code_changed & ~AC.will_be_requested()).allow(
    AUTOMATED
)
# Never compute from an input that is missing, being or about to be rebuilt, or failed a
# blocking check.
inputs_ready = (
    ~AC.any_deps_missing()
    & ~AC.any_deps_in_progress()
    & ~inputs_pending
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
    minimum_interval_seconds=AUTOMATION_INTERVAL_S,
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
