"""Mutation testing: plant each known bug (a "mutant") in a fresh copy of the checkout, run the
tests expected to catch it there and record which one did (`docs/mutants.md`).

    python -m tests.mutants [--only NAME ...] [--list] [--check] [--jobs 1] [--timeout 30]

A mutant replaces one exact piece of source text, which must occur exactly once: a refactor that
moves the code fails here, naming the mutant, instead of silently planting nothing. The copy holds
the checkout's tracked and untracked-not-ignored files and the dbt manifest. Its code is imported
through PYTHONPATH: sys.path (the copy first) is searched by the path finder, and the editable
install's finder, which maps `phantom_assets` to /work/main, is appended to sys.meta_path after
it; `_imported_package` checks this before any test runs. A mutant is caught when a test FAILS;
a collection, import or fixture error makes it broken (the tests no longer say anything about it).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = "dbt_project/target/manifest.json"  # ignored, but needed to build the definitions
REPORT = REPO / "docs" / "mutants.md"
PYTHON = str(REPO / ".venv" / "bin" / "python")
PYTEST = "-m pytest -x -q -rfE -p no:cacheprovider -n 2 --dist loadfile".split()
FAILED = re.compile(r"^FAILED (\S+)", re.MULTILINE)
ERROR = re.compile(r"^ERROR (.+)$", re.MULTILINE)
EXCEPTION = re.compile(r"^E +(\w*Error\b.*)$", re.MULTILINE)  # e.g. a conftest import error
TEST_DEFENSE = "tests/assets/test_defense.py::"
TAU_TEST = (
    "tests/assets/test_contamination_market.py::"
    "test_the_detector_threshold_flags_the_configured_share_of_the_stores_humans"
)
LEARNING_TEST = (
    "tests/unit/policies/test_learning.py::"
    "test_each_tier_learns_near_the_best_fixed_action_and_halves_its_untrained_regret"
)


@dataclass(frozen=True)
class Mutant:
    """One planted bug: `old` replaced by `new` in `path` (relative to the repository root), and
    the few tests (pytest node ids or files) expected to catch it."""

    name: str
    description: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]

    def problems(self) -> list[str]:
        """Why the mutant cannot be planted in the checkout as it is (empty: it can)."""
        count = (REPO / self.path).read_text().count(self.old)
        found = [] if count == 1 else [f"{self.name}: `old` occurs {count} times in {self.path}"]
        files = sorted({test.partition("::")[0] for test in self.tests})
        return found + [f"{self.name}: no test file {f}" for f in files if not (REPO / f).is_file()]


MUTANTS = (
    Mutant(
        name="sb3_learns_nothing",
        description="the stable-baselines3 tiers train for 0 steps",
        path="phantom_assets/policies/sb3.py",
        old="model.learn(total_timesteps=steps,",
        new="model.learn(total_timesteps=0,",
        tests=tuple(f"{LEARNING_TEST}[{tier}-1]" for tier in ("ppo", "a2c", "dqn")),
    ),
    Mutant(
        name="agents_buy_at_first_quote",
        description="an agent buys at its first session's quote, not the lowest of its K",
        path="phantom_assets/market/engine.py",
        old="if q < running:",
        new="if j == 0:",
        tests=("tests/unit/market/test_engine.py::test_totals_match_a_per_shopper_oracle",),
    ),
    Mutant(
        name="anchor_mean_of_all_quotes",
        description="a product's anchor is the mean of its log quotes, not the zero-engagement "
        "quote",
        path="phantom_assets/market/prices/model.py",
        old="anchors[:, ~pooled] = log_anchor, lo, hi",
        new="anchors[:, ~pooled] = np.bincount(local, y[rich]) / np.bincount(local), lo, hi",
        tests=(
            "tests/unit/market/test_prices.py::test_price_model_recovers_the_demo_storefront",
            "tests/unit/market/test_prices.py::test_price_model_recovers_another_pricing_rule",
        ),
    ),
    Mutant(
        name="valuation_bound_sign",
        description="a demand fit is identified only if the valuation spread σ can exceed the "
        "anchor (`σ ≤ MAX_SIGMA` flipped to `≥`)",
        path="phantom_assets/market/demand/model.py",
        old="not sigma_high <= MAX_SIGMA",
        new="not sigma_high >= MAX_SIGMA",
        tests=(
            "tests/unit/market/test_demand.py::"
            "test_the_likelihood_fit_recovers_a_planted_demand_inside_its_intervals",
        ),
    ),
    Mutant(
        name="missing_evaluation_refusal_removed",
        description="a candidate whose evaluation is missing no longer blocks certification",
        path="phantom_assets/assets/audit.py",
        old="            *incomplete,\n",
        new="",
        tests=(
            f"{TEST_DEFENSE}test_a_grid_with_a_candidates_evaluation_missing_is_not_certified"
            "_and_says_which",
        ),
    ),
    Mutant(
        name="harm_without_lost_purchases",
        description="human harm counts the overpayment only, not the spend of purchases lost",
        path="phantom_assets/market/metrics.py",
        old='harmed = total["human_overpay"] + total["human_lost_spend"]',
        new='harmed = total["human_overpay"]',
        tests=(
            "tests/unit/evaluation/test_protocol.py::"
            "test_coi_harm_and_false_positive_rate_are_ratios_of_the_envs_step_totals",
        ),
    ),
    Mutant(
        name="tau_from_agents_scores",
        description="the detector threshold τ is the (1 − fpr) quantile of the agents' scores",
        path="phantom_assets/market/compile.py",
        old="detector_threshold(human.score, config.detector_fpr)",
        new="detector_threshold(agent.score, config.detector_fpr)",
        tests=(TAU_TEST,),
    ),
    Mutant(
        name="tau_fixed_at_half",
        description="the detector threshold τ is 0.5 whatever the humans' scores",
        path="phantom_assets/market/compile.py",
        old='return float(np.quantile(human_scores, 1.0 - fpr, method="higher"))',
        new="return 0.5",
        # The unit test: the pipeline's own blocking oracle check fails the tiny build first.
        tests=("tests/unit/market/test_compile.py",),
    ),
    Mutant(
        name="oracle_is_tuned_static",
        description="regret is measured against the tuned-static action, not oracle.parquet",
        path="phantom_assets/assets/evaluation.py",
        old="oracle = pl.read_parquet(lake.oracle_dir(store) / ORACLE_FILE)",
        new="tuned = Response.read(lake.oracle_dir(store) / REFERENCE_FILE)\n"
        "    oracle = pl.read_parquet(lake.oracle_dir(store) / ORACLE_FILE).with_columns(\n"
        "        level=pl.lit(tuned.level), markup=pl.lit(tuned.markup), delta=pl.lit(0.0)\n"
        "    )",
        tests=(f"{TEST_DEFENSE}test_regret_is_measured_against_the_oracle_table_of_the_build",),
    ),
    Mutant(
        name="baseline_is_static",
        description="the gate tests the candidate against the static engine on the held-out "
        "seeds (the report still names tuned-static as the baseline)",
        path="phantom_assets/audit/gate.py",
        old="_test_candidate(profit, harm, policy, baseline,",
        new="_test_candidate(profit, harm, policy, static,",
        tests=(
            "tests/unit/audit/test_gate.py",
            f"{TEST_DEFENSE}test_the_certificates_baseline_numbers_are_tuned_statics_own_held"
            "_out_rows",
        ),
    ),
    Mutant(
        name="setting_forgotten",
        description="`trained_policies` forgets `training.envs` in its declared settings (what SB3 "
        "learns changes, the policies stay fresh)",
        path="phantom_assets/assets/defense.py",
        old='    "training.envs",\n',
        new="",
        tests=("tests/integration/test_settings_readers.py",),
    ),
    Mutant(
        name="read_without_edge_passes",
        description="a body that reads another asset's data without depending on it passes",
        path="phantom_assets/assets/declared.py",
        old="for name in sorted(reads.assets - own - upstream)",
        new="for name in sorted(reads.assets - own - upstream - reads.assets)",
        tests=("tests/unit/test_declared_assets.py",),
    ),
    Mutant(
        name="gate_never_certifies",
        description="the gate asks a Holm p below 1/100 of its level: it keeps its false "
        "certification rate, and certifies nothing where a defence does pay",
        path="phantom_assets/audit/gate.py",
        old="if holm[i] <= level and not failed_checks[t.policy]",
        new="if holm[i] <= level / 100 and not failed_checks[t.policy]",
        tests=(
            "tests/e2e/test_planted.py",
            "tests/statistics/test_gate_calibration.py",
        ),
    ),
    Mutant(
        name="v2_scored_in_sample",
        description="detector v2's per-fold classifiers are fitted on every session, the held-out "
        "fold included: the market's bank and the recall table score sessions in sample",
        path="phantom_assets/detector/classifier.py",
        old="int(fold): fit_quote_classifier(x[folds != fold], y[folds != fold], features, c)",
        new="int(fold): fit_quote_classifier(x, y, features, c)",
        tests=("tests/assets/test_quote_detector.py",),
    ),
    Mutant(
        name="evasion_ignores_theta",
        description="agents that adapt keep their own statistics whatever θ: full mimicry still "
        "leaves the detector its value",
        path="phantom_assets/detector/evasion.py",
        old="mixed = [(1.0 - t) * agent_x + t * twin for t in thetas]",
        new="mixed = [agent_x for t in thetas]",
        tests=(
            "tests/unit/detector/test_evasion.py",
            "tests/unit/market/test_ledger.py",
        ),
    ),
    Mutant(
        name="gate_ignores_adapting_agents",
        description="the gate compares only on the agents as logged (θ = 0): a detector value "
        "that agents adapting within the declared band take away still certifies",
        path="phantom_assets/audit/pairs.py",
        old="cells = np.flatnonzero(cube.alpha0 == alpha0)",
        new="cells = np.flatnonzero((cube.alpha0 == alpha0) & (cube.theta == 0.0))",
        tests=("tests/unit/audit/test_gate.py", "tests/unit/audit/test_pairs.py"),
    ),
    Mutant(
        name="bundle_ignores_timing",
        description="the portable scorer drops the timing features (scores them as a session "
        "with no gap yet): a service would quote with another detector than the market's",
        path="phantom_assets/detector/runtime.py",
        old="        n = self._gaps\n",
        new="        n = 0\n",
        tests=(
            "tests/unit/detector/test_runtime.py",
            "tests/assets/test_detector_bundle.py",
        ),
    ),
)


@dataclass(frozen=True)
class Outcome:
    """How a mutant fared: `verdict` caught, survived, broken or timed out; `detail` the first
    failing test's node id (caught) or what broke."""

    mutant: Mutant
    verdict: str
    detail: str
    seconds: float

    @property
    def caught(self) -> bool:
        return self.verdict == "caught"

    @property
    def caught_by(self) -> str:
        """The report's *caught by* cell: the failing test, else the verdict in bold and why."""
        if self.caught:
            return f"`{self.detail}`"
        return f"**{self.verdict.upper()}** {self.detail}".strip()


def copy_checkout(destination: Path) -> None:
    """The checkout's tracked and untracked-not-ignored files (a tracked file deleted in the
    working tree is skipped) and the dbt manifest, with their times (the tests re-parse dbt when a
    source is newer than the manifest)."""
    command = ["git", "ls-files", "-co", "--exclude-standard", "-z"]
    listed = subprocess.run(command, cwd=REPO, check=True, capture_output=True).stdout.decode()
    for name in {*listed.split("\0"), MANIFEST} - {""}:
        source, target = REPO / name, destination / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)


def _imported_package(copy: Path, env: dict[str, str]) -> Path:
    """Where `phantom_assets` is imported from in `copy` (found, not executed)."""
    code = "import importlib.util as u; print(u.find_spec('phantom_assets').origin)"
    found = subprocess.run(
        [PYTHON, "-c", code], cwd=copy, env=env, check=True, capture_output=True, text=True
    ).stdout
    return Path(found.strip())


def run_mutant(mutant: Mutant, timeout_s: float) -> Outcome:
    """Plant `mutant` in a fresh copy and run its tests there (`-x`: the first failure is
    enough); the whole process group is killed after `timeout_s`."""
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.name}-") as folder:
        copy = Path(folder)
        copy_checkout(copy)
        source = copy / mutant.path
        source.write_text(source.read_text().replace(mutant.old, mutant.new))
        env = {
            **os.environ,
            "PYTHONPATH": str(copy),
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }
        if not _imported_package(copy, env).is_relative_to(copy):
            raise SystemExit(f"{mutant.name}: the copy's phantom_assets is not the one imported")
        started = time.monotonic()
        process = subprocess.Popen(
            [PYTHON, *PYTEST, *mutant.tests],
            cwd=copy,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            output = process.communicate(timeout=timeout_s)[0]
        except subprocess.TimeoutExpired:
            output = None
        finally:
            if process.poll() is None:  # timed out or interrupted: pytest and all it started
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
        seconds = time.monotonic() - started
    if output is None:
        return Outcome(mutant, "timed out", f"(limit {duration(timeout_s)})", seconds)
    if process.returncode == 0:
        return Outcome(mutant, "survived", "", seconds)
    if failed := FAILED.search(output):
        return Outcome(mutant, "caught", failed[1], seconds)
    tail = "\n".join(output.splitlines()[-30:])
    print(f"--- {mutant.name}: pytest exit {process.returncode}, output ends:\n{tail}", flush=True)
    errors = ERROR.findall(output) or EXCEPTION.findall(output)[-1:]
    detail = f"pytest exit {process.returncode}: {errors[0] if errors else 'no test failed'}"
    return Outcome(mutant, "broken", detail, seconds)


def duration(seconds: float) -> str:
    """`seconds` as the report shows them: "42 s", "5 min 3 s"."""
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def cell(text: str) -> str:
    """`text` safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def table(mutants: tuple[Mutant, ...], outcomes: dict[str, Outcome]) -> str:
    """The markdown table of every mutant; those without an outcome read "not run"."""
    rows = ["| mutant | planted bug | caught by | time |", "|---|---|---|---|"]
    for mutant in mutants:
        outcome = outcomes.get(mutant.name)
        caught_by = "not run" if outcome is None else outcome.caught_by
        time_taken = "" if outcome is None else duration(outcome.seconds)
        rows.append(
            f"| `{mutant.name}` | {cell(mutant.description)} | {cell(caught_by)} | {time_taken} |"
        )
    return "\n".join(rows) + "\n"


def write_report(text: str, command: str, partial: bool) -> None:
    """`docs/mutants.md`: how to run, the date and command of this run, the table (atomically:
    a temp file in the same folder, then renamed over the old report)."""
    note = "\nRows reading *not run* were not part of this run (its `--only`)." if partial else ""
    header = (
        "# Mutants\n\n"
        "Planted bugs the tests must catch (`tests/mutants.py`): each is planted alone in a\n"
        "copy of the checkout and the tests listed for it run there; *caught by* is the first\n"
        "test that failed. `make mutants` runs every mutant (a pipeline-level one builds the\n"
        "tiny pipeline: 1.5-3.5 min on 2 cores),\n"
        "`.venv/bin/python -m tests.mutants --only NAME ...` some, and `--check` only verifies\n"
        "that every mutant still applies.\n\n"
        f"Last run {datetime.date.today().isoformat()}: `{command}`.{note}\n\n"
    )
    handle, temporary = tempfile.mkstemp(dir=REPORT.parent, prefix=".mutants-", suffix=".md")
    with os.fdopen(handle, "w") as out:
        out.write(header + text)
    os.replace(temporary, REPORT)


def main(argv: list[str] | None = None) -> int:
    """Run the selected mutants, print the table and write `docs/mutants.md`; 1 if any mutant
    survived, broke or timed out."""
    names = [m.name for m in MUTANTS]
    parser = argparse.ArgumentParser(
        prog="python -m tests.mutants",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--only", nargs="+", action="extend", choices=names, metavar="NAME")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument(
        "--check",
        action="store_true",
        help="only verify that every mutant applies (its text occurs once)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--timeout", type=float, default=30.0, help="minutes per mutant")
    args = parser.parse_args(argv)
    selected = tuple(m for m in MUTANTS if not args.only or m.name in args.only)
    if args.list:
        for m in selected:
            print(f"{m.name}: {m.description}\n  {m.path}\n  " + "\n  ".join(m.tests))
        return 0
    if problems := [p for m in selected for p in m.problems()]:
        raise SystemExit("mutants that no longer apply (update them):\n" + "\n".join(problems))
    if args.check:
        print(f"all {len(selected)} mutants apply")
        return 0
    outcomes: dict[str, Outcome] = {}

    def run(mutant: Mutant) -> None:
        outcome = run_mutant(mutant, args.timeout * 60)
        outcomes[mutant.name] = outcome
        print(
            f"{mutant.name}: {outcome.verdict} {outcome.detail} ({duration(outcome.seconds)})",
            flush=True,
        )

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(run, selected))
    text = table(MUTANTS, outcomes)
    print(text)
    command = " ".join(["python -m tests.mutants", *(argv if argv is not None else sys.argv[1:])])
    write_report(text, command, partial=len(selected) < len(MUTANTS))
    return 0 if all(o.caught for o in outcomes.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
