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
# Each tick advances the graph one run deep (a run holds assets of one group and partitioning), so
# the interval bounds how long a new file takes to reach the kernels; a tick takes ~1 s.
AUTOMATION_INTERVAL_S = 15
RETRAIN_CRON = "0 * * * *"  # hourly: a burst of batches within the hour causes one retrain

AUTOMATED = dg.AssetSelection.groups(*CHEAP_GROUPS, *EXPENSIVE_GROUPS)

# Something this asset computes from changed since it was last requested or updated: an input's
# data version or its own code version.
inputs_or_code_changed = (
    AC.newly_missing() | AC.any_deps_match(AC.data_version_changed()) | AC.code_version_changed()
).since_last_handled()
# How far up an asset looks for changes still on their way to it: a change is "on its way" while
# the asset it reached first has not run since; deep enough for every diamond of the graph (a
# store's prices change beside its sessions, and the market's sensitivity reads both).
PENDING_DEPTH = 3


def _inputs_pending(depth: int) -> dg.AutomationCondition:
    """An automated input, or one of its ancestors up to `depth` levels, is being rebuilt or will
    itself be rebuilt first in another run (its own inputs changed and it was not requested
    since): wait for the new versions rather than run now and again after them."""
    waiting = (inputs_or_code_changed & ~AC.will_be_requested()) | AC.in_progress()
    ancestors = waiting
    for _ in range(depth - 1):
        ancestors = waiting | AC.any_deps_match(ancestors).allow(AUTOMATED)
    return AC.any_deps_match(ancestors).allow(AUTOMATED)


inputs_pending = _inputs_pending(PENDING_DEPTH)
# Never compute from an input that is missing, being or about to be rebuilt, or failed a
# blocking check.
inputs_ready = (
    ~AC.any_deps_missing()
    & ~AC.any_deps_in_progress()
    & ~inputs_pending
    & ~AC.in_progress()
    & AC.all_deps_blocking_checks_passed()
)


def _changed(group_name: str) -> dg.AutomationCondition:
    """`inputs_or_code_changed`, or an input of the same group rebuilt in this very tick that can
    share its run (same partitioning: the dbt models; a store's sessions and their kernels; a
    store's scores and separability report): then the asset joins that run rather than wait for
    the next tick. Across groups it waits, so one slow group does not hold up another (the
    store's demand fit does not delay its kernels)."""
    same_run = AC.any_deps_match(AC.will_be_requested()).allow(dg.AssetSelection.groups(group_name))
    return inputs_or_code_changed | same_run.since_last_handled()


def rebuild_on_change(group_name: str) -> dg.AutomationCondition:
    return (_changed(group_name) & inputs_ready).with_label(
        "on change (input data version or code version)"
    )


def rebuild_on_cron(group_name: str) -> dg.AutomationCondition:
    return (
        _changed(group_name) & AC.cron_tick_passed(RETRAIN_CRON).since_last_handled() & inputs_ready
    ).with_label(f"on change, at the next {RETRAIN_CRON!r} tick")


automation_sensor = dg.AutomationConditionSensorDefinition(
    "phantom_automation_sensor",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.STOPPED,
    minimum_interval_seconds=AUTOMATION_INTERVAL_S,
    # Runs straight from the tick: a backfill would add a daemon tick (~30 s) per step.
    emit_backfills=False,
    description="Evaluates every asset's automation condition (eager for cheap assets, an hourly "
    "cron for training and benchmarks).",
)


def condition_for(group_name: str | None) -> dg.AutomationCondition | None:
    """The automation condition of an asset group (None: only sensors and people start it)."""
    if group_name in CHEAP_GROUPS:
        return rebuild_on_change(group_name)
    if group_name in EXPENSIVE_GROUPS:
        return rebuild_on_cron(group_name)
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
