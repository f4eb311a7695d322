"""Audit group: the certification report of a store's best defended policy (DESIGN §8)."""

import dagster as dg
import numpy as np

# Not re-exported by `dagster`: the graph of a list of assets, without resources to bind.
from dagster._core.definitions.assets.graph.asset_graph import AssetGraph

from phantom_assets.assets.lineage import collect_lineage
from phantom_assets.assets.metadata import (
    PACKAGE_ROOT,
    artifact_version,
    code_version_of,
    with_settings,
)
from phantom_assets.assets.partitions import BY_STORE, GridPartitions, store_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.audit import (
    CertificationReport,
    environment_snapshot,
    failed_blocking_checks,
    per_seed,
    promotion_gate,
    rank_candidates,
    render_markdown,
)
from phantom_assets.config import Settings
from phantom_assets.constants import SELECTION_SPLIT
from phantom_assets.lake import REPORT_FILE, REPORT_MD_FILE, STRESS_FILE
from phantom_assets.policies import policy_key
from phantom_assets.storage import write_bytes_atomic

AUDIT_CODE = code_version_of(
    "phantom_assets.assets.audit", "phantom_assets.audit", "phantom_assets.assets.lineage"
)
STRESS_METRIC = "reward"
GATE_SEED = 29


def certification_report(
    context: dg.AssetExecutionContext, storage: StorageResource
) -> dg.MaterializeResult:
    """Certificate for a store's best robust policy: its full lineage back to every raw batch
    (data and code versions, runs, checks), the environment, and the promotion gate -- selected
    on the selection seeds, certified only if every blocking check passed and, on held-out
    episode seeds, it beats both its baseline twin and the static engine (exact sign-flip test,
    Holm across candidates)."""
    store, settings = context.partition_key, storage.settings()
    stress = settings.lake.all_evaluations(store, STRESS_FILE)
    if stress is None:
        raise dg.Failure(f"no stress evaluations for store {store}: materialize policy_evaluations")
    static = policy_key("static", None, settings.training.train_alphas[0])
    selection = per_seed(stress, STRESS_METRIC)[SELECTION_SPLIT]
    tested = rank_candidates(selection, static).head(settings.evaluation.gate_candidates)
    # The graph these settings define (an in-process `materialize` has no repository; the
    # import is local because the graph module collects this one).
    from phantom_assets.assets.graph import build_assets

    graph = AssetGraph.from_assets(build_assets(settings))
    lineage = {}
    for policy in sorted({*tested["policy"], *tested["twin"], static}):  # a handful of policies
        key = dg.MultiPartitionKey({"store": store, "policy": policy})
        lineage[policy] = collect_lineage(
            context.instance, graph, dg.AssetKey("policy_evaluations"), key
        )
    failed = {row["policy"]: failed_blocking_checks(
                  {(r.asset, r.partition): r for p in (row["policy"], row["twin"], static)
                   for r in lineage[p]}.values())
              for row in tested.iter_rows(named=True)}  # fmt: skip
    decision = promotion_gate(stress, static=static, failed_checks=failed, metric=STRESS_METRIC,
                              rng=np.random.default_rng(GATE_SEED),
                              n_candidates=settings.evaluation.gate_candidates)  # fmt: skip
    chosen = (decision.candidate, decision.baseline, static)
    records = list({(r.asset, r.partition): r for p in chosen for r in lineage[p]}.values())
    report = CertificationReport(
        store=store, policy=decision.candidate, certified=decision.certified,
        reasons=decision.reasons, records=tuple(records), gate=decision.to_dict(),
        config=settings.as_dict(),
        seeds={"gate": GATE_SEED, "selection": list(decision.selection_seeds),
               "test": list(decision.test_seeds)},
        environment=environment_snapshot(PACKAGE_ROOT.parent),
    )  # fmt: skip
    folder = settings.lake.certification_dir(store)
    write_bytes_atomic(report.to_json().encode(), folder / REPORT_FILE)
    write_bytes_atomic(render_markdown(report).encode(), folder / REPORT_MD_FILE)
    version, artifacts = artifact_version(folder / REPORT_FILE, folder / REPORT_MD_FILE)
    context.log.info(f"{store}: {decision.candidate} "
                     f"{'CERTIFIED' if decision.certified else 'not certified'}")  # fmt: skip
    return dg.MaterializeResult(
        data_version=version,
        metadata={
            **artifacts,
            "certified": decision.certified,
            "policy": decision.candidate,
            "baseline": decision.baseline,
            "static": static,
            "reasons": dg.MetadataValue.md("\n".join(f"- {r}" for r in decision.reasons)),
            "n_lineage_records": len(records),
            "n_pairs": decision.n_pairs,
            "selection_seeds": str(list(decision.selection_seeds)),
            "test_seeds": str(list(decision.test_seeds)),
            "mean_diff": decision.mean_diff,
            "ci_low": decision.ci_low,
            "ci_high": decision.ci_high,
            "p_value": decision.p_value,
            "method": decision.method,
        },
    )


def build_audit_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`certification_report`, versioned with the gate's settings (seeds, candidates)."""
    asset = dg.asset(
        partitions_def=store_partitions,
        deps=[dg.AssetDep("policy_evaluations", partition_mapping=BY_STORE), "benchmark_curves"],
        group_name="audit",
        kinds={"python", "json"},
        code_version=with_settings(AUDIT_CODE, settings.evaluation, settings.training.train_alphas),
    )
    return [asset(certification_report)]
