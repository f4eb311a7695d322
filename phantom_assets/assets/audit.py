"""Audit group: the certification report of a store's best defended policy
(docs/method.md#certification)."""

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import dagster as dg
import numpy as np
import polars as pl

from phantom_assets.assets.dagster_internals import stale_status_resolver
from phantom_assets.assets.declared import ALL_SETTINGS, declared_asset
from phantom_assets.assets.lineage import collect_lineage, collect_record
from phantom_assets.assets.metadata import (
    PACKAGE_ROOT,
    artifact_version,
    code_version_of,
)
from phantom_assets.assets.partitions import BY_STORE, GridPartitions, policy_grid, store_partitions
from phantom_assets.assets.resources import StorageResource
from phantom_assets.audit import (
    ArtifactRecord,
    CertificationReport,
    GateDecision,
    environment_snapshot,
    failed_blocking_checks,
    promotion_gate,
    render_markdown,
    select_candidates,
    stale_records,
)
from phantom_assets.config import Settings
from phantom_assets.evaluation import certificate_assumptions
from phantom_assets.lake import (
    LEDGER_FILE,
    REPORT_FILE,
    REPORT_MD_FILE,
    SENSITIVITY_FILE,
    STRESS_FILE,
)
from phantom_assets.market import MarketSpec
from phantom_assets.market.ledger import ledger_sentences
from phantom_assets.policies import policy_key
from phantom_assets.storage import write_bytes_atomic

AUDIT_CODE = code_version_of(
    "phantom_assets.assets.audit", "phantom_assets.audit", "phantom_assets.assets.lineage"
)
STRESS_METRIC = "profit"
GATE_SEED = 29
TEST_NAMES = ("profit_vs_baseline", "detector_value", "human_harm")


class LineageSource(Protocol):
    """Where a certificate's lineage records come from: the Dagster instance when the asset
    writes it, the report's own records when `phantom audit` re-derives it."""

    def lineage(self, asset: str, partition: str) -> list[ArtifactRecord]:
        """Records of `asset [partition]` and everything upstream of it."""
        ...

    def record(self, asset: str, partition: str) -> ArtifactRecord | None:
        """The record of `asset [partition]` alone (None: it has none)."""
        ...


@dataclass(frozen=True)
class InstanceLineage:
    """`LineageSource` of a Dagster instance (what the asset records), for one derivation: the
    lineages share one stale-status resolver, so each upstream partition is resolved once."""

    instance: dg.DagsterInstance
    graph: Any

    @cached_property
    def _resolver(self) -> Any:
        return stale_status_resolver(self.instance, self.graph)

    def lineage(self, asset: str, partition: str) -> list[ArtifactRecord]:
        return collect_lineage(
            self.instance, self.graph, dg.AssetKey(asset), partition, self._resolver
        )

    def record(self, asset: str, partition: str) -> ArtifactRecord | None:
        return collect_record(
            self.instance, self.graph, dg.AssetKey(asset), partition, self._resolver
        )


def store_policy_key(store: str, policy: str) -> str:
    """The partition key of `policy_evaluations [store|policy]` as records name it."""
    return str(dg.MultiPartitionKey({"store": store, "policy": policy}))


def derive_certificate(
    settings: Settings, store: str, source: LineageSource, environment: dict[str, Any]
) -> tuple[CertificationReport, GateDecision]:
    """The store's certificate from the evaluations in `settings.data_dir`, the checks of the
    lineage `source` gives, the sensitivity grid and the agent ledger: deterministic given them
    (the gate's resamples are seeded), so `phantom audit` re-derives it from the hashed files.

    Raises:
        dg.Failure: no stress evaluations, or none of a reference policy.
    """
    stress = settings.lake.all_evaluations(store, STRESS_FILE)
    if stress is None:
        raise dg.Failure(f"no stress evaluations for store {store}: materialize policy_evaluations")
    train_alpha = settings.agents.train_alphas[0]
    baseline = policy_key("tuned", None, train_alpha)
    static = policy_key("static", None, train_alpha)
    grid = policy_grid(settings)
    stress = stress.filter(pl.col("policy").is_in(grid))  # partitions of another grid stay out
    evaluated = sorted(set(stress["policy"].unique()))
    missing = sorted(set(grid) - set(evaluated))
    if baseline in missing or static in missing:
        raise dg.Failure(
            f"{store}: no stress evaluations of the references "
            f"{[p for p in (baseline, static) if p in missing]}: materialize "
            f"policy_evaluations for them"
        )
    # A candidate the grid configures but that was never evaluated (or failed) could have won:
    # certifying without it would certify the best of an incomplete grid.
    incomplete = [
        f"policy_evaluations [{store}|{p}]: missing (never materialized or failed)" for p in missing
    ]
    cfg = settings.evaluation
    tested = select_candidates(
        stress, baseline, [static], cfg.max_human_harm, cfg.gate_candidates, STRESS_METRIC
    )
    references = (baseline, static)
    lineage = {
        policy: source.lineage("policy_evaluations", store_policy_key(store, policy))
        for policy in sorted({*tested["policy"], *references})  # a handful of policies
    }
    cited_markets = {
        "sensitivity": source.lineage("market_sensitivity", store),
        "oracle": source.lineage("market_oracle", store),
    }
    # A record built before its code or an input changed (a market rebuilt while the policies
    # wait for their retraining) would make the certificate mix versions: it cannot pass.
    cites = {**lineage, **cited_markets}
    failed = {
        policy: [
            *incomplete,
            *failed_blocking_checks(_records(lineage, (policy, *references))),
            *stale_records(_records(cites, (policy, *references, *cited_markets))),
        ]
        for policy in tested["policy"]
    }
    decision = promotion_gate(
        stress,
        baseline=baseline,
        static=static,
        failed_checks=failed,
        rng=np.random.default_rng(GATE_SEED),
        max_human_harm=cfg.max_human_harm,
        metric=STRESS_METRIC,
        n_candidates=cfg.gate_candidates,
    )
    sensitivity = settings.lake.sensitivity_dir(store) / SENSITIVITY_FILE
    agents = settings.agents
    spec = MarketSpec.load(settings.lake.market_dir(store), agents)
    assumptions = certificate_assumptions(
        pl.read_parquet(sensitivity) if sensitivity.exists() else None,
        decision.certified,
        spec.sources,
    )
    ledger_path = settings.lake.oracle_dir(store) / LEDGER_FILE
    ledger = (
        pl.read_parquet(ledger_path)
        .filter(pl.col("k") == agents.nominal_k)
        .with_columns(pl.selectors.float().fill_nan(None))
        .to_dicts()
        if ledger_path.exists()
        else []
    )
    # Everything the certificate decides from or cites is in its hashed lineage: every tested
    # candidate's and reference's lineage, every evaluation the selection ranked, the sensitivity
    # grid and the ledger (with the market they were computed on).
    cited = {
        **{p: lineage[p] for p in lineage},
        **{
            p: [r]
            for p in evaluated
            if p not in lineage
            if (r := source.record("policy_evaluations", store_policy_key(store, p)))
        },
        **cited_markets,
    }
    # Artifact paths relative to the data root: the report stays valid in a copied root.
    records = [r.relative_to(settings.data_dir) for r in _records(cited, list(cited))]
    report = CertificationReport(
        store=store,
        policy=decision.candidate,
        certified=decision.certified,
        reasons=decision.reasons,
        records=tuple(records),
        gate={
            **decision.to_dict(),
            "assumptions": assumptions,
            "ledger": {
                "k": agents.nominal_k,
                "rows": ledger,
                "reading": ledger_sentences(ledger, agents.nominal_k, agents.evasion_band),
            },
            "candidate_set": [p for p in grid if p not in references],
            "missing_evaluations": missing,
        },
        config=settings.as_dict(),
        seeds={
            "gate": GATE_SEED,
            "selection": list(decision.selection_seeds),
            "test": list(decision.test_seeds),
        },
        environment=environment,
    )
    return report, decision


def certification_report(
    context: dg.AssetExecutionContext,
    storage: StorageResource,
    asset_graph: dg.ResourceParam[Any],
) -> dg.MaterializeResult:
    """Certificate for a store's best agent-aware defence: its full lineage back to every raw
    batch (data and code versions, runs, checks), the environment, and the promotion gate --
    selected on the selection seeds; certified only if every blocking check passed and, on
    held-out episode seeds, it beats the best undefended response (the tuned-static tier) on
    stress profit, its detector value (fitted − permuted f) is positive and total human harm
    stays within the bound (Holm across candidates). `phantom audit` re-derives it."""
    store, settings = context.partition_key, storage.settings()
    lineage = InstanceLineage(context.instance, asset_graph)
    report, decision = derive_certificate(
        settings, store, lineage, environment_snapshot(PACKAGE_ROOT.parent)
    )
    folder = settings.lake.certification_dir(store)
    text = report.to_json()
    write_bytes_atomic(text.encode(), folder / REPORT_FILE)
    # Rendered from the JSON as written (its sorted keys), as `phantom audit` re-renders it.
    certificate = render_markdown(CertificationReport.from_json(text))
    write_bytes_atomic(certificate.encode(), folder / REPORT_MD_FILE)
    version, artifacts = artifact_version(folder / REPORT_FILE, folder / REPORT_MD_FILE)
    gate = report.gate
    context.log.info(
        f"{store}: {report.policy} {'CERTIFIED' if report.certified else 'not certified'}"
    )
    return dg.MaterializeResult(
        data_version=version,
        metadata={
            **artifacts,
            "certified": report.certified,
            "policy": report.policy,
            "baseline": gate["baseline"],
            "static": gate["static"],
            "reasons": dg.MetadataValue.md("\n".join(f"- {r}" for r in report.reasons)),
            # The whole certificate (report.md): the UI opens it in a window of its own, so no
            # reason is cut off by the width of the metadata table.
            "certificate": dg.MetadataValue.md(certificate),
            "n_lineage_records": len(report.records),
            "missing_evaluations": str(gate["missing_evaluations"]),
            "n_pairs": gate["n_pairs"],
            "selection_seeds": str(gate["selection_seeds"]),
            "test_seeds": str(gate["test_seeds"]),
            **{
                name: test.describe() if test else "undefined"
                for name, test in zip(TEST_NAMES, decision.tests, strict=True)
            },
            "p_value": gate["p_value"],
            "method": gate["method"],
            "decision_holds_on_sensitivity_grid": str(
                gate["assumptions"].get("decision_holds_on_whole_grid", "not built")
            ),
        },
    )


def _records(
    lineage: dict[str, list[ArtifactRecord]], policies: Sequence[str]
) -> list[ArtifactRecord]:
    """The lineage records of `policies`, each asset partition once."""
    return list({(r.asset, r.partition): r for p in policies for r in lineage[p]}.values())


def build_audit_assets(settings: Settings, grids: GridPartitions) -> list[dg.AssetsDefinition]:
    """`certification_report`, versioned with every setting: the gate decides with a few of them
    (the candidates, the harm bound, the training α that names the baseline), and the report
    records the whole configuration it was built under."""
    asset = declared_asset(
        settings=settings,
        code=AUDIT_CODE,
        reads=(ALL_SETTINGS,),
        partitions_def=store_partitions,
        deps=[
            dg.AssetDep("policy_evaluations", partition_mapping=BY_STORE),
            "market_simulators",
            "market_sensitivity",
            "market_oracle",
        ],
        group_name="audit",
        kinds={"python", "json"},
    )
    return [asset(certification_report)]
