"""`phantom` command line: simulate, run, summary, batches, publish, audit, bench
(docs/architecture.md#command-line).

All commands honour PHANTOM_DATA_DIR / PHANTOM_PROFILE / PHANTOM_CONFIG and DAGSTER_HOME.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
from pathlib import Path

from orchestration.console import WarningLog, command_log_path, output_to
from orchestration.scale_out.demo import SLICE_POLICIES
from orchestration.scale_out.demo import STORE as SLICE_STORE
from phantom_assets.calibration import STUDY_MODULES
from phantom_assets.config import Settings
from phantom_assets.constants import STORES
from phantom_assets.lake import (
    DETECTOR_PUBLISH_PLAN_FILE,
    PUBLISH_PLAN_FILE,
    REPORT_FILE,
    REPORT_MD_FILE,
    SIGNATURE_FILE,
)

# Two cores: two runs at a time (training and evaluation are single-threaded per run).
DEFAULT_WORKERS = 2
# What `phantom publish` commits (the dataset, and the detectors in a model repo next to it), and
# the file each writes its plan or commit to.
PUBLISH_PLANS = {"hf_dataset": PUBLISH_PLAN_FILE, "hf_detector": DETECTOR_PUBLISH_PLAN_FILE}

logger = logging.getLogger("phantom")
# Library warnings of this process (Dagster's beta notices while the definitions load): into the
# run's log file, not the terminal (`--verbose` shows them here; `main` installs it).
WARNINGS = WarningLog()


def _ensure_dagster_home() -> Path:
    """Create DAGSTER_HOME with the project's dagster.yaml (pool limits) if it is missing."""
    from orchestration.resources import DAGSTER_YAML_TEMPLATE, dagster_home_from_env

    home = dagster_home_from_env()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        shutil.copyfile(DAGSTER_YAML_TEMPLATE, config)
    return home


def _simulate_params(settings, args: argparse.Namespace | None = None):
    """Simulation parameters from the profile's `[simulation]` (every field: the demand world's
    price test and slope too), with any command-line overrides applied."""
    import dataclasses

    from phantom_assets.simulate import params_from

    overrides = {
        "seed": getattr(args, "seed", None),
        "humans_per_store": getattr(args, "humans", None),
        "agents_per_store": getattr(args, "agents", None),
        "separability": getattr(args, "separability", None),
    }
    given = {name: value for name, value in overrides.items() if value is not None}
    return dataclasses.replace(params_from(settings), **given)


def cmd_simulate(args: argparse.Namespace) -> int:
    from orchestration.resources import settings_from_env
    from phantom_assets.simulate import simulate_to_incoming

    settings = settings_from_env()
    out = Path(args.out) if args.out else settings.incoming_dir
    written = simulate_to_incoming(_simulate_params(settings, args), out)
    for path in written:
        logger.info("wrote %s", path)
    logger.info("%d file(s) in %s", len(written), out)
    return 0


def _not_rebuilt(settings: Settings, instance, report) -> dict[tuple[str, str | None], str]:
    """The summary's results this run did not rebuild, with where they are from."""
    from orchestration.definitions import build_definitions
    from orchestration.stale_results import not_rebuilt
    from orchestration.summary import SECTION_ASSETS, SESSIONS_ASSET

    results = [(a, store) for a in SECTION_ASSETS.values() for store in STORES]
    results.append((SESSIONS_ASSET, None))
    return not_rebuilt(build_definitions(settings), instance, report, results)


def _run(
    args: argparse.Namespace,
    selection: str | None,
    run_config: dict | None = None,
    check_upstream: bool = True,
    stores: list[str] | None = None,
    force: bool = False,
) -> tuple[int, Settings, dict[tuple[str, str | None], str]]:
    """`run_pipeline` with the CLI's workers, verbosity and exit codes; up-to-date tasks are
    not run unless `force`. Also returns the summary's results the run did not rebuild."""
    import dagster as dg

    from orchestration.failures import failed_lines, skipped_lines
    from orchestration.planning import MissingUpstreamError, SelectionError
    from orchestration.resources import settings_from_env
    from orchestration.runner import Interrupted, run_pipeline

    settings = settings_from_env()
    home = _ensure_dagster_home()
    logger.info("profile %s, data %s, DAGSTER_HOME %s", settings.profile, settings.data_dir, home)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        try:
            report = run_pipeline(
                settings,
                instance,
                selection,
                stores=stores,
                echo=logger.info,
                run_config=run_config,
                workers=args.workers,
                verbose=args.verbose,
                check_upstream=check_upstream,
                force=force,
            )
        except (MissingUpstreamError, SelectionError) as error:
            logger.error("%s", error)
            return 2, settings, {}
        except Interrupted as signal_received:
            logger.error("interrupted by %s: runs in flight marked canceled", signal_received)
            return 128 + signal_received.signum, settings, {}
        if report.log_path:
            WARNINGS.write_to(report.log_path)  # this process's, beside the workers' own
            logger.info("tool output and warnings: %s (--verbose shows them here)", report.log_path)
        for outcome in report.failed:
            logger.error("%s", "\n".join(failed_lines(instance, outcome)))
        for line in skipped_lines(report.skipped):
            logger.error("%s", line)
        if report.up_to_date:
            logger.info(
                "%d of %d runs up to date, not rerun (--force reruns them)",
                len(report.up_to_date),
                len(report.outcomes),
            )
        stale = _not_rebuilt(settings, instance, report)
    return (1 if report.failed or report.skipped else 0), settings, stale


def _check_selection(settings: Settings, selection: str) -> None:
    """Raise `SelectionError` for a selection that names no asset (before anything is written)."""
    from orchestration.definitions import build_definitions
    from orchestration.planning import plan_stages

    plan_stages(build_definitions(settings), selection)


def _prepare_data_root(settings: Settings, selection: str | None) -> int:
    """Simulate the demo into an empty data root; stop (2) when the demo and the user's data
    would be pooled (rows of unsupported stores are only announced: ingest quarantines them)."""
    from orchestration.batches import is_empty_root, preflight
    from orchestration.planning import SelectionError
    from phantom_assets.batches import demo_dir
    from phantom_assets.simulate import simulate_to_incoming

    if is_empty_root(settings):
        try:
            if selection:  # a typo must not leave a simulated demo behind
                _check_selection(settings, selection)
        except SelectionError as error:
            logger.error("%s", error)
            return 2
        folder = demo_dir(settings.incoming_dir)
        written = simulate_to_incoming(_simulate_params(settings), folder)
        logger.info(
            "empty data root: simulated the demo into %s (%d files); your own exports go "
            "into %s (see `phantom batches`)",
            folder,
            len(written),
            settings.incoming_dir,
        )
    errors, notes = preflight(settings)
    for note in notes:
        logger.warning("%s", note)
    for error in errors:
        logger.error("%s", error)
    return 2 if errors else 0


def _print_summary(
    settings: Settings, as_json: bool, stale: dict[tuple[str, str | None], str] | None = None
) -> None:
    from orchestration.summary import collect_summary, render_summary

    summary = collect_summary(settings, stale)
    if as_json:
        sys.stdout.write(json.dumps(summary, allow_nan=False, default=str) + "\n")
    else:
        sys.stdout.write(render_summary(settings, summary) + "\n")


def cmd_run(args: argparse.Namespace) -> int:
    from orchestration.resources import settings_from_env

    if code := _prepare_data_root(settings_from_env(), args.select):
        return code
    code, settings, stale = _run(args, args.select, stores=args.store, force=args.force)
    if code != 2:
        _print_summary(settings, args.json, stale)
    return code


def cmd_summary(args: argparse.Namespace) -> int:
    from orchestration.resources import settings_from_env

    _print_summary(settings_from_env(), args.json)
    return 0


def cmd_batches(args: argparse.Namespace) -> int:
    import dagster as dg

    from orchestration.batches import batch_infos, drop_batch, render_batches, reset_batches
    from orchestration.resources import settings_from_env

    settings = settings_from_env()
    if args.action == "list":
        infos = batch_infos(settings)
        if args.json:
            sys.stdout.write(json.dumps([i.to_json() for i in infos]) + "\n")
        else:
            sys.stdout.write(render_batches(infos, settings.data_dir) + "\n")
        return 0
    with dg.DagsterInstance.from_config(str(_ensure_dagster_home())) as instance:
        try:
            if args.action == "drop":
                done = [line for key in args.keys for line in drop_batch(settings, instance, key)]
            else:
                done = reset_batches(settings, instance, demo_only=args.demo)
        except KeyError as error:
            logger.error("%s", error.args[0])
            return 2
    for line in done:
        logger.info("%s", line)
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    config: dict[str, object] = {"dry_run": bool(args.dry_run)}
    if args.public:
        config["private"] = False
    if args.revision:
        config["revision"] = args.revision
    # The lake may come from another machine's run: publish what is there. The dataset and, in a
    # model repo next to it, the stores' detectors.
    run_config = {"ops": {asset: {"config": config} for asset in PUBLISH_PLANS}}
    selection = " or ".join(f'key:"{asset}"' for asset in PUBLISH_PLANS)
    # Publishing is an action, not a rebuild: it runs even when the staged folders are fresh.
    code, settings, _ = _run(args, selection, run_config, check_upstream=False, force=True)
    plans = {
        asset: json.loads((settings.publish_dir / name).read_text())
        for asset, name in PUBLISH_PLANS.items()
        if (settings.publish_dir / name).exists()
    }
    if plans:  # one JSON object: each repo's plan or commit, by asset
        sys.stdout.write(json.dumps(plans, indent=2) + "\n")
    return code


def _audit_settings(args: argparse.Namespace) -> Settings:
    import dataclasses

    from orchestration.resources import settings_from_env

    settings = settings_from_env()
    if args.data_dir:
        settings = dataclasses.replace(settings, data_dir=Path(args.data_dir).resolve())
    return settings


def _audit(settings: Settings, store: str) -> int:
    """0 if the store's certificate files are the recorded bytes and its decision the
    lineage's; else each problem is logged, naming the file, and the exit code returned (2: no
    readable report, 1: a tampered, forged or stale one)."""
    from orchestration.certification import certificate_problems, load_report
    from phantom_assets.audit import verify_records

    logger.info("auditing the data root %s", settings.data_dir)
    try:
        report = load_report(settings, store)
    except (FileNotFoundError, ValueError) as error:
        logger.error("%s", error)
        return 2
    verdict = "CERTIFIED" if report.certified else "NOT CERTIFIED"
    logger.info("%s: policy %s %s (as the report says)", store, report.policy, verdict)
    result = verify_records(report.records, root=settings.data_dir)
    if not result.ok:
        first = result.mismatches[0]
        where = ", ".join(str(settings.data_dir / f) for f in first.file.split(", "))
        logger.error("tampered or missing artifact: %s (%s)", first.message, where)
        return 1
    logger.info(
        "verified %d files of %d records in %s", result.n_files, result.n_records, settings.data_dir
    )
    problems = certificate_problems(settings, report)
    for problem in problems:
        logger.error("forged or stale certificate: %s", problem)
    if problems:
        return 1
    logger.info("the verdict, reasons and gate numbers are what the lineage decides")
    return 0


def _signature_files(settings: Settings, store: str) -> tuple[bytes, bytes, Path]:
    folder = settings.lake.certification_dir(store)
    return (
        (folder / REPORT_FILE).read_bytes(),
        (folder / REPORT_MD_FILE).read_bytes(),
        (folder / SIGNATURE_FILE),
    )


def _quiet_replay(args: argparse.Namespace, settings: Settings, report):
    """`replay_step`, its output (Dagster's events, the step's own log lines) and the warnings
    into a log file named on the terminal, unless `--verbose`."""
    from orchestration.certification import replay_step
    from orchestration.resources import settings_from_env

    if args.verbose:
        return replay_step(settings, report, args.replay, args.partition)
    log = command_log_path(settings_from_env().data_dir, "audit-replay")
    WARNINGS.write_to(log)
    try:
        with output_to(log):
            return replay_step(settings, report, args.replay, args.partition)
    finally:
        logger.info("replay output and warnings: %s (--verbose shows them here)", log)


def cmd_audit(args: argparse.Namespace) -> int:
    from orchestration.certification import load_report

    settings = _audit_settings(args)
    if code := _audit(settings, args.store):
        return code
    if args.verify:
        from phantom_assets.audit.signing import (
            Signature,
            SigningUnavailable,
            signature_problem,
        )

        report_json, report_md, signature_path = _signature_files(settings, args.store)
        if not signature_path.is_file():
            logger.error(
                "%s: no signature (sign with `phantom certify --sign KEY`)", signature_path
            )
            return 1
        try:
            signature = Signature.from_json(signature_path.read_text())
            problem = signature_problem(
                Path(args.verify).read_bytes(), signature, report_json, report_md
            )
        except (SigningUnavailable, ValueError, OSError) as error:
            logger.error("%s: %s", signature_path, error)
            return 2
        if problem is not None:
            logger.error("%s: %s", signature_path, problem)
            return 1
        logger.info("%s: signed by the holder of %s", signature_path, args.verify)
    if args.replay:
        report = load_report(settings, args.store)
        try:
            replay = _quiet_replay(args, settings, report)
        except ValueError as error:
            logger.error("%s", error)
            return 2
        label = f"{replay.record.asset} [{replay.record.partition}]"
        if not replay.reproduces:
            logger.error(
                "replay of %s does not reproduce: recorded %s, got %s",
                label,
                replay.record.data_version,
                replay.reproduced_version,
            )
            return 1
        logger.info("replay of %s reproduces data version %s", label, replay.reproduced_version)
    return 0


def cmd_certify(args: argparse.Namespace) -> int:
    """`--new-key PATH`: write an Ed25519 key pair; `--store S --sign KEY`: audit the store's
    certificate, then sign it (report.sig next to it). The key is read, never logged or stored."""
    from phantom_assets.audit.signing import SigningUnavailable, new_key_pair, sign_certificate
    from phantom_assets.storage import write_bytes_atomic

    try:
        if args.new_key:
            private_path = Path(args.new_key)
            if private_path.exists():
                logger.error("%s exists: refusing to overwrite a key", private_path)
                return 2
            private_pem, public_pem = new_key_pair()
            private_path.touch(mode=0o600)
            private_path.write_bytes(private_pem)
            public_path = private_path.with_name(private_path.name + ".pub")
            write_bytes_atomic(public_pem, public_path)
            logger.info(
                "wrote the private key %s (keep it secret) and the public key %s",
                private_path,
                public_path,
            )
            return 0
        if not (args.store and args.sign):
            logger.error("phantom certify: give --store and --sign KEY (or --new-key PATH)")
            return 2
        settings = _audit_settings(args)
        if code := _audit(settings, args.store):
            logger.error("%s: the certificate does not audit: not signed", args.store)
            return code
        report_json, report_md, signature_path = _signature_files(settings, args.store)
        signature = sign_certificate(Path(args.sign).read_bytes(), report_json, report_md)
    except (SigningUnavailable, ValueError, OSError) as error:
        logger.error("phantom certify: %s", error)
        return 2
    write_bytes_atomic(signature.to_json().encode(), signature_path)
    logger.info("signed %s's certificate: %s", args.store, signature_path)
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from phantom_assets.detector import BUNDLE_FILE, DetectorBundle, StreamScorer

    if args.bundle:
        path = Path(args.bundle)
    else:
        from orchestration.resources import settings_from_env

        path = settings_from_env().lake.detector_dir(args.store) / BUNDLE_FILE
    if not path.is_file():
        logger.error(
            "no detector bundle at %s: run `phantom run` (it builds detector_bundle[%s]) or "
            "pass --bundle",
            path,
            args.store,
        )
        return 1
    try:
        scorer = StreamScorer(DetectorBundle.load(path))
    except ValueError as error:
        logger.error("%s", error)
        return 1
    rejected = 0
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            quote = scorer.push(json.loads(line))
        except ValueError as error:  # json.JSONDecodeError is a ValueError
            rejected += 1
            logger.error("stdin line %d rejected: %s: %s", number, error, line.strip()[:200])
            continue
        if quote is not None:
            sys.stdout.write(json.dumps(quote) + "\n")
            if args.flush:
                sys.stdout.flush()
    if rejected:
        logger.error("%d line(s) rejected (named above); every other line was scored", rejected)
    return 1 if rejected else 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.target == "calibration":
        from phantom_assets.calibration import run_studies

        failed = 0
        for result in run_studies(args.reps, args.seed or 0, args.studies or STUDY_MODULES):
            sys.stdout.write(json.dumps(result.to_dict()) + "\n")
            sys.stdout.flush()
            failed += not result.holds
        return 1 if failed else 0
    if args.target == "front":
        from orchestration.bench import bench_front
        from orchestration.resources import settings_from_env

        root = Path(args.root).resolve() if args.root else None
        try:
            result = bench_front(settings_from_env(), args.scale, args.workers, root)
        except (ValueError, RuntimeError) as error:
            logger.error("%s", error)
            return 1
    elif args.target == "scale-out":
        from orchestration.bench import bench_scale_out
        from orchestration.resources import config_file_from_env, settings_from_env
        from orchestration.scale_out.deployment import MissingBinaryError

        policies = [p for p in args.policies.split(",") if p]
        try:
            result = bench_scale_out(
                settings_from_env(), config_file_from_env(), policies, args.store, args.workers
            )
        except (ValueError, RuntimeError, MissingBinaryError) as error:
            logger.error("%s", error)
            return 1
    elif args.target == "automation":
        from orchestration.bench_automation import TIMEOUT_S, bench_automation
        from orchestration.resources import settings_from_env

        try:
            result = bench_automation(settings_from_env(), args.store, TIMEOUT_S)
        except (ValueError, RuntimeError) as error:
            logger.error("%s", error)
            return 1
    elif args.target == "detector":
        result = _bench_detector(args.store, args.repeats)
        if result is None:
            return 1
    elif args.target == "fingerprint":
        from phantom_assets.fingerprint.bench import bench_fingerprint

        result = bench_fingerprint(n_events=args.events, seed=args.seed or 0)
    else:
        from phantom_assets.market.bench import bench_env

        result = bench_env(steps=args.steps, seed=args.seed or 0, repeats=args.repeats)
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    return 0


def _bench_detector(store: str, repeats: int) -> dict | None:
    """`phantom bench detector`: the data root's bundle of `store` over its labelled sessions."""
    import polars as pl

    from orchestration.resources import settings_from_env
    from phantom_assets.constants import ACTORS
    from phantom_assets.detector import BUNDLE_FILE, DetectorBundle
    from phantom_assets.detector.bench import bench_detector

    lake = settings_from_env().lake
    path = lake.detector_dir(store) / BUNDLE_FILE
    sessions = [lake.labeled_sessions(store, actor) for actor in ACTORS]
    missing = [str(p) for p in (path, *sessions) if not p.is_file()]
    if missing:
        logger.error("bench detector needs a built data root (run `phantom run`): no %s", missing)
        return None
    columns = ["trajectory", "event_offsets_ms"]
    both = pl.concat([pl.read_parquet(p, columns=columns) for p in sessions])
    return bench_detector(
        DetectorBundle.load(path), both["trajectory"], both["event_offsets_ms"], repeats
    )


def _store_names(text: str) -> str:
    """`--store`'s value when every name in it is a store (argparse then says which is not)."""
    from orchestration.planning import SelectionError, checked_stores

    try:
        checked_stores([text])
    except SelectionError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    return text


def _add_execution_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help=f"worker processes running Dagster runs in parallel (default {DEFAULT_WORKERS}; "
        "0 = in this process)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show tool output and warnings here instead of the run log file",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="phantom", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    simulate = sub.add_parser("simulate", help="write simulated raw exports (all formats)")
    simulate.add_argument("--out", help="target folder (default: $PHANTOM_DATA_DIR/incoming)")
    simulate.add_argument("--seed", type=int)
    simulate.add_argument("--humans", type=int, help="human subjects per store")
    simulate.add_argument("--agents", type=int, help="agent subjects per store")
    simulate.add_argument(
        "--separability", type=float, help="1 = default gap, 0 = agents behave like humans"
    )
    simulate.set_defaults(func=cmd_simulate)

    run = sub.add_parser(
        "run",
        help="register incoming files and materialize the graph (an empty data root gets the "
        "demo, simulated into incoming/demo/)",
    )
    run.add_argument("--select", help="Dagster asset selection, e.g. '*labeled_sessions'")
    run.add_argument(
        "--store",
        action="append",
        type=_store_names,
        help="only the partitions of this store (repeatable, or a comma list, e.g. hotel); "
        "batch and unpartitioned assets run as usual",
    )
    run.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    run.add_argument(
        "--force",
        action="store_true",
        help="rerun every selected task, also those whose assets are up to date",
    )
    _add_execution_options(run)
    run.set_defaults(func=cmd_run)

    summary = sub.add_parser("summary", help="the end-of-run summary of the data root, again")
    summary.add_argument("--json", action="store_true", help="one JSON object, for machines")
    summary.set_defaults(func=cmd_summary)

    batches = sub.add_parser("batches", help="list, drop or reset the registered batches")
    actions = batches.add_subparsers(dest="action", required=True)
    listing = actions.add_parser(
        "list", help="key, demo or own, source file, stores, rows, quarantined, registered"
    )
    listing.add_argument("--json", action="store_true", help="one JSON array")
    drop = actions.add_parser(
        "drop",
        help="remove batches everywhere (lake partitions, registry, partition key); your file "
        "moves to <data>/dropped/, a demo file is deleted; the next run rebuilds without them",
    )
    drop.add_argument("keys", nargs="+", metavar="KEY")
    reset = actions.add_parser("reset", help="drop every batch (your files move to dropped/)")
    reset.add_argument("--demo", action="store_true", help="only the demo's batches and files")
    batches.set_defaults(func=cmd_batches)

    publish = sub.add_parser(
        "publish",
        help="stage the dataset and the stores' detectors and commit them to (private) Hub repos: "
        "the dataset repo and the model repo <repo>-detector; prints one JSON object, each "
        "repo's plan or commit by asset",
    )
    publish.add_argument(
        "--dry-run",
        action="store_true",
        help="plan the commit (adds, deletes), write nothing to the Hub",
    )
    publish.add_argument(
        "--public", action="store_true", help="create the repo public (default: private)"
    )
    publish.add_argument(
        "--revision", help="branch to commit to, created if missing (default: main)"
    )
    _add_execution_options(publish)
    publish.set_defaults(func=cmd_publish)

    audit = sub.add_parser("audit", help="verify a certification report offline")
    audit.add_argument("--store", required=True, choices=list(STORES))
    audit.add_argument(
        "--replay", metavar="ASSET", help="also re-run one recorded step, e.g. trained_policies"
    )
    audit.add_argument("--partition", help="which recorded partition to replay (default: first)")
    audit.add_argument(
        "--data-dir", help="the data root to verify (default: $PHANTOM_DATA_DIR, else ./data)"
    )
    audit.add_argument(
        "--verify", metavar="PUBKEY", help="also check report.sig against this Ed25519 public key"
    )
    audit.add_argument(
        "--verbose",
        action="store_true",
        help="show the replay's output (Dagster's events, training lines) and warnings here "
        "instead of a log file",
    )
    audit.set_defaults(func=cmd_audit)

    certify = sub.add_parser(
        "certify", help="sign an audited certificate (Ed25519), or make a key pair"
    )
    certify.add_argument("--store", choices=list(STORES))
    certify.add_argument("--sign", metavar="KEY", help="the signer's Ed25519 private key (PEM)")
    certify.add_argument("--new-key", metavar="PATH", help="write a key pair: PATH, PATH.pub")
    certify.add_argument(
        "--data-dir", help="the data root (default: $PHANTOM_DATA_DIR, else ./data)"
    )
    certify.set_defaults(func=cmd_certify)

    score = sub.add_parser(
        "score",
        help="score live sessions with a store's detector bundle: JSON Lines events on stdin "
        "({session_id, event[, event_id]}, sessions may interleave), one JSON line per quote "
        "on stdout ({session_id, index, [event_id,] score, flagged}); a bad line is named on "
        "stderr and skipped (exit 1 at the end)",
    )
    score.add_argument("--bundle", help="a detector.json (default: the data root's, of --store)")
    score.add_argument("--store", choices=STORES, default=STORES[0], help="default: %(default)s")
    score.add_argument(
        "--flush", action="store_true", help="flush after every quote (for a live pipe)"
    )
    score.set_defaults(func=cmd_score)

    bench = sub.add_parser(
        "bench",
        help="performance benchmarks (one JSON object); scale-out: a training slice on a "
        "throwaway Celery + Postgres deployment, one partition at a time vs all at once; front: "
        "'*separability_report' on --scale x the demo's data (wall time, peak RSS); "
        "calibration: one JSON line per procedure x layout, non-zero exit if any misses its "
        "level or coverage; automation: a new --store export through `dagster dev`'s daemon "
        "(seconds to the kernels, runs per change); detector: per-event latency and sessions/s "
        "of the data root's bundle of --store over its labelled sessions",
    )
    bench.add_argument(
        "target",
        choices=[
            "env",
            "fingerprint",
            "detector",
            "calibration",
            "front",
            "scale-out",
            "automation",
        ],
    )
    bench.add_argument("--seed", type=int)
    bench.add_argument("--events", type=int, default=1_000_000, help="fingerprint corpus size")
    bench.add_argument("--steps", type=int, default=5_000, help="env steps per pass")
    bench.add_argument(
        "--repeats", type=int, default=5, help="env: timed passes per mode (medians reported)"
    )
    bench.add_argument("--reps", type=int, default=500, help="calibration replications")
    bench.add_argument(
        "--studies", nargs="+", choices=STUDY_MODULES, help="calibration studies (default: all)"
    )
    bench.add_argument(
        "--scale",
        type=int,
        default=64,
        help="front: multiple of the profile's subjects per store to simulate (default 64)",
    )
    bench.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help="front: `phantom run --workers`; scale-out: Celery workers (one slot each)",
    )
    bench.add_argument(
        "--policies",
        default=",".join(SLICE_POLICIES),
        help="scale-out: policy keys of the slice, a comma list (default: %(default)s)",
    )
    bench.add_argument(
        "--store",
        choices=STORES,
        default=SLICE_STORE,
        help="scale-out: the slice's store; automation: the store of the new export; "
        "detector: the store whose bundle is timed",
    )
    bench.add_argument(
        "--root", help="front: an empty folder to keep the data and logs in (default: a temp one)"
    )
    bench.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Third-party libraries (alembic, dbt) stay at WARNING; PHANTOM's own progress is INFO.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    logger.setLevel(logging.INFO)
    args = build_parser().parse_args(argv)
    if getattr(args, "verbose", False):
        return _checked(args)
    WARNINGS.install()  # before the definitions are imported: their notices go to a log file
    try:
        return _checked(args)
    finally:
        WARNINGS.uninstall()
        _log_held_warnings(args.command)


def _checked(args: argparse.Namespace) -> int:
    """The command, after checking the configuration (a bad PHANTOM_CONFIG is one line before
    anything runs; `bench` reads none)."""
    if args.command != "bench":
        from orchestration.resources import settings_from_env

        try:
            settings_from_env()
        except ValueError as error:
            logger.error("configuration: %s", error)
            return 2
    return args.func(args)


def _log_held_warnings(command: str) -> None:
    """Warnings no run's log file took (`--workers 0`, a command without a run): into their own
    log file, named on the terminal."""
    if not WARNINGS.held:
        return
    from orchestration.resources import settings_from_env

    try:
        path = command_log_path(settings_from_env().data_dir, command)
    except (ValueError, OSError):  # no data root to log into: show them, as Python would
        sys.stderr.writelines(WARNINGS.held)
        return
    count = len(WARNINGS.held)
    WARNINGS.write_to(path)
    logger.info("%d library warning(s): %s (--verbose shows them here)", count, path)


if __name__ == "__main__":
    sys.exit(main())
