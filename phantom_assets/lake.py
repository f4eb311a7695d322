"""The lake layout: every folder and file name under `<data>/lake`, and the partition-key codecs.

The one owner of the layout (docs/architecture.md#lake-layout): assets, the CLI, the audit and the
publisher ask a `Lake` where an artifact lives instead of spelling paths. Folders are Hive-style
(`<asset>/<dim>=<value>/…`) so `read_partitions` turns them back into columns. Pure: no Dagster,
no environment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from phantom_assets.storage import partition_dir, read_partitions

_ALPHA_KEY = re.compile(r"^a(?P<hundredths>\d{3})$")

# File names, one place each (the folder says which partition they belong to).
EVENTS_FILE, QUARANTINE_FILE = "events.parquet", "quarantine.parquet"
SESSIONS_FILE = "sessions.parquet"
KERNEL_FILE, FOLD_KERNELS_FILE, KERNEL_META_FILE = (
    "kernel.parquet",
    "fold_kernels.parquet",
    "kernel.json",
)
SCORES_FILE, PREFIX_SCORES_FILE, CALIBRATION_FILE = (
    "scores.parquet",
    "prefix_scores.parquet",
    "calibration.json",
)
REPORT_FILE, REPORT_MD_FILE, SIGNATURE_FILE = "report.json", "report.md", "report.sig"
SPEC_ARRAYS_FILE, SPEC_SCALARS_FILE = "spec.npz", "spec.json"
POLICY_FILE, CURVE_FILE, WEIGHTS_FILE = "policy.json", "learning_curve.parquet", "weights.npz"
NOMINAL_FILE, STRESS_FILE, TRACES_FILE = "nominal.parquet", "stress.parquet", "traces.parquet"
EVALUATION_FILES = (NOMINAL_FILE, STRESS_FILE, TRACES_FILE)
CURVES_FILE, DIFFERENCES_FILE = "curves.parquet", "differences.parquet"
REGRESSION_FILE, SUMMARY_FILE = "regression.json", "summary.md"
PUBLISH_PLAN_FILE = "last_publish.json"
DETECTOR_PUBLISH_PLAN_FILE = "last_publish_detector.json"
SLICE_DIGEST_FILE = "digest.json"

# --- contaminated datasets G(α): sessions, demand proxy and the α̂ report per store × α ---
DEMAND_FILE, ALPHA_HAT_FILE = "demand.json", "alpha_hat.json"

# --- the store's own prices (from its price logs) and the premium each class was quoted ---
ANCHORS_FILE, PRICE_MODEL_FILE = "anchors.parquet", "price_model.json"
QUOTES_FILE = "quotes.parquet"
OBSERVED_COI_FILE, COI_DIFFERENCE_FILE = "observed_coi.parquet", "coi_difference.json"
OBSERVED_COI_PLOT_FILE = "observed_coi.png"
# --- the store's own demand (its purchase decisions at quoted prices) ---
DEMAND_MODEL_FILE, CONVERSION_FILE = "demand.json", "conversion.parquet"
DEMAND_REPLICATES_FILE, CONVERSION_PLOT_FILE = "replicates.parquet", "conversion.png"
# --- the market's conclusions over its declared assumptions ---
SENSITIVITY_FILE, SENSITIVITY_MD_FILE = "sensitivity.parquet", "sensitivity.md"
# --- the quote-time detectors (v2 and kernel-only): scores, v2's classifier, recall by prefix ---
QUOTE_SCORES_FILE, CLASSIFIER_FILE = "quote_scores.parquet", "classifier.json"
RECALL_FILE, RECALL_MD_FILE = "recall.parquet", "recall.md"

# --- market benchmarks per store: COI erosion (table + figure) and the fixed-action oracle ---
EROSION_FILE, EROSION_PLOT_FILE = "coi_erosion.parquet", "coi_erosion.png"
EROSION_METRICS_FILE = "erosion_metrics.parquet"
ORACLE_FILE, REFERENCE_FILE = "oracle.parquet", "reference.json"
DEFENDED_FILE = "defended.json"  # the best defended fixed action (null: the grid has none)
LEDGER_FILE, LEDGER_PLOT_FILE = "ledger.parquet", "ledger.png"
OBSERVATION_FILE = "observation.parquet"

# --- observed COI per store (the market's `observed_coi` asset): premium per class with its CI ---
OBSERVED_COI_FILE = "observed_coi.parquet"

# --- benchmark per store: regret vs the oracle and the λ × adversary factorial ---
REGRET_FILE, ABLATION_FILE = "regret.parquet", "ablation.parquet"
ADAPTIVITY_FILE = "adaptivity.parquet"


def alpha_key(alpha: float) -> str:
    """Partition key of a contamination level: `a` + round(100·α) zero-padded (0.5 -> `a050`).

    Raises:
        ValueError: unless `alpha` is a multiple of 0.01 in [0, 1].
    """
    value = float(alpha)
    hundredths = round(value * 100)
    if not 0.0 <= value <= 1.0 or abs(value * 100 - hundredths) > 1e-6:
        raise ValueError(f"alpha must be a multiple of 0.01 in [0, 1] for a key, got {alpha!r}")
    return f"a{hundredths:03d}"


def alpha_from_key(key: str) -> float:
    """Inverse of `alpha_key` (`a050` -> 0.5); raises ValueError naming a malformed key."""
    match = _ALPHA_KEY.match(key)
    if match is None or int(match["hundredths"]) > 100:
        raise ValueError(f"malformed alpha key {key!r}; expected `a000` ... `a100`")
    return int(match["hundredths"]) / 100


@dataclass(frozen=True)
class Lake:
    """Paths of every stored artifact below one lake root (`<data>/lake`)."""

    root: Path

    # --- ingest -------------------------------------------------------------------------------
    def events(self, batch: str) -> Path:
        return partition_dir(self.root, "raw_events", batch=batch) / EVENTS_FILE

    def quarantine(self, batch: str) -> Path:
        return partition_dir(self.root, "raw_events_quarantine", batch=batch) / QUARANTINE_FILE

    def all_events(self) -> list[Path]:
        return sorted(partition_dir(self.root, "raw_events").glob(f"batch=*/{EVENTS_FILE}"))

    def all_quarantine(self) -> list[Path]:
        folder = partition_dir(self.root, "raw_events_quarantine")
        return sorted(folder.glob(f"batch=*/{QUARANTINE_FILE}"))

    # --- warehouse ----------------------------------------------------------------------------
    def store_warehouse(self, store: str) -> Path:
        return partition_dir(self.root, "store_warehouse", store=store) / SLICE_DIGEST_FILE

    def store_slice(self, store: str, mart: str) -> Path:
        """The store's rows of one warehouse mart (what the per-store assets read)."""
        return partition_dir(self.root, "store_warehouse", store=store) / f"{mart}.parquet"

    # --- fingerprint --------------------------------------------------------------------------
    def labeled_sessions(self, store: str, actor: str) -> Path:
        return (
            partition_dir(self.root, "labeled_sessions", store=store, actor=actor) / SESSIONS_FILE
        )

    def kernels_dir(self, store: str, actor: str) -> Path:
        return partition_dir(self.root, "transition_kernels", store=store, actor=actor)

    def all_kernels(self) -> pl.DataFrame | None:
        return read_partitions(self.root, "transition_kernels", f"store=*/actor=*/{KERNEL_FILE}")

    def scores_dir(self, store: str) -> Path:
        return partition_dir(self.root, "divergence_scores", store=store)

    def separability_dir(self, store: str) -> Path:
        return partition_dir(self.root, "separability_report", store=store)

    # --- contamination and market -------------------------------------------------------------
    def contaminated_dir(self, store: str, alpha: float) -> Path:
        return partition_dir(
            self.root, "contaminated_datasets", store=store, alpha=alpha_key(alpha)
        )

    def all_contaminated(self, pattern: str) -> pl.DataFrame | None:
        return read_partitions(self.root, "contaminated_datasets", pattern)

    def store_prices_dir(self, store: str) -> Path:
        return partition_dir(self.root, "store_prices", store=store)

    def observed_coi_dir(self, store: str) -> Path:
        return partition_dir(self.root, "observed_coi", store=store)

    def demand_dir(self, store: str) -> Path:
        return partition_dir(self.root, "store_demand", store=store)

    def market_dir(self, store: str) -> Path:
        return partition_dir(self.root, "market_simulators", store=store)

    def sensitivity_dir(self, store: str) -> Path:
        return partition_dir(self.root, "market_sensitivity", store=store)

    def erosion_dir(self, store: str) -> Path:
        return partition_dir(self.root, "coi_erosion", store=store)

    def oracle_dir(self, store: str) -> Path:
        return partition_dir(self.root, "market_oracle", store=store)

    def quote_detector_dir(self, store: str) -> Path:
        return partition_dir(self.root, "quote_detector", store=store)

    def detector_dir(self, store: str) -> Path:
        return partition_dir(self.root, "detector_bundle", store=store)

    # --- defense, evaluation, audit -----------------------------------------------------------
    def policy_dir(self, store: str, policy: str) -> Path:
        return partition_dir(self.root, "trained_policies", store=store, policy=policy)

    def evaluation_dir(self, store: str, policy: str) -> Path:
        return partition_dir(self.root, "policy_evaluations", store=store, policy=policy)

    def all_evaluations(self, store: str, name: str) -> pl.DataFrame | None:
        return read_partitions(self.root, "policy_evaluations", f"store={store}/policy=*/{name}")

    def benchmark_dir(self, store: str) -> Path:
        return partition_dir(self.root, "benchmark_curves", store=store)

    def certification_dir(self, store: str) -> Path:
        return partition_dir(self.root, "certification_report", store=store)

    def certification_report(self, store: str) -> Path:
        return self.certification_dir(store) / REPORT_FILE

    def observed_coi_file(self, store: str) -> Path:
        return partition_dir(self.root, "observed_coi", store=store) / OBSERVED_COI_FILE
