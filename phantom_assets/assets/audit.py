"""Audit group: the certification report of a store's best defended policy (DESIGN §8)."""

import dagster as dg
import numpy as np

from orchestration.lineage import collect_lineage
from orchestration.resources import REPO_ROOT, StorageResource
from phantom_assets.assets.metadata import artifact_version, code_version_of
from phantom_assets.assets.partitions import store_partitions
from phantom_assets.audit import (
    CertificationReport,
    choose_candidate,
    environment_snapshot,
    failed_blocking_checks,
    paired_metric,
    promotion_gate,
    render_markdown,
)
from phantom_assets.storage import partition_dir, read_partitions, write_bytes_atomic

BY_STORE = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="store")
STRESS_METRIC = "reward"
GATE_SEED = 29


@dg.asset(
    partitions_def=store_partitions,
    deps=[dg.AssetDep("policy_evaluations", partition_mapping=BY_STORE), "benchmark_curves"],
    group_name="audit",
    kinds={"python", "json"},
    code_version=code_version_of("phantom_assets.assets.audit", "phantom_assets.audit",
                                 "orchestration.lineage"),
)  # fmt: skip
def certification_report(
    context: dg.AssetExecutionContext, storage: StorageResource
) -> dg.MaterializeResult:
    """Certificate for a store's best robust policy: its full lineage back to every raw batch
    (data and code versions, runs, checks), the environment, and the promotion gate -- certified
    only if every blocking check passed and it beats its baseline-mode twin on the stress metric
    with a paired bootstrap CI that excludes zero."""
    store, settings = context.partition_key, storage.settings()
    stress = read_partitions(
        settings.lake_dir, "policy_evaluations", f"store={store}/policy=*/stress.parquet"
    )
    if stress is None:
        raise dg.Failure(f"no stress evaluations for store {store}: materialize policy_evaluations")
    candidate, baseline = choose_candidate(stress, STRESS_METRIC)
    # The code location's graph (an in-process `materialize` has no repository on its context).
    from orchestration.definitions import defs

    graph = defs.resolve_asset_graph()
    records = []
    for policy in (candidate, baseline):
        key = dg.MultiPartitionKey({"store": store, "policy": policy})
        records += collect_lineage(context.instance, graph, dg.AssetKey("policy_evaluations"), key)
    records = list({(r.asset, r.partition): r for r in records}.values())
    failed = failed_blocking_checks(records)
    decision = promotion_gate(
        *paired_metric(stress, candidate, baseline, STRESS_METRIC),
        checks_passed=not failed, failed_checks=tuple(failed), rng=np.random.default_rng(GATE_SEED),
    )  # fmt: skip
    report = CertificationReport(
        store=store, policy=candidate, certified=decision.certified, reasons=decision.reasons,
        records=tuple(records),
        gate={**decision.to_dict(), "baseline": baseline, "metric": STRESS_METRIC},
        config=settings.as_dict(),
        seeds={"gate": GATE_SEED, "evaluation": settings.evaluation.seed},
        environment=environment_snapshot(REPO_ROOT),
    )  # fmt: skip
    folder = partition_dir(settings.lake_dir, "certification_report", store=store)
    write_bytes_atomic(report.to_json().encode(), folder / "report.json")
    write_bytes_atomic(render_markdown(report).encode(), folder / "report.md")
    version, artifacts = artifact_version(folder / "report.json", folder / "report.md")
    context.log.info(
        f"{store}: {candidate} {'CERTIFIED' if decision.certified else 'not certified'}"
    )
    return dg.MaterializeResult(
        data_version=version,
        metadata={
            **artifacts,
            "certified": decision.certified,
            "policy": candidate,
            "baseline": baseline,
            "reasons": dg.MetadataValue.md("\n".join(f"- {r}" for r in decision.reasons)),
            "n_lineage_records": len(records),
            "mean_diff": decision.mean_diff,
            "ci_low": decision.ci_low,
            "ci_high": decision.ci_high,
        },
    )
