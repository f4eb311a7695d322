"""Assets whose inputs and settings are declared once and held to at every run
(docs/architecture.md#inputs-and-settings).

`declared_asset` is `dg.asset` with two declarations that are each made in one place:

- `deps`, the upstream assets: they are the graph's edges, and while the body runs every lake
  path it builds is recorded (`phantom_assets.reads`; the lake layout reports the asset each path
  belongs to). A read of another asset's data without its edge, and an edge whose data the body
  never reads, fail the run, naming them.
- `reads`, the settings the asset computes with (`"market"` for every field of a section,
  `"agents.alpha_grid"` for one): their values are what the code version hashes, and every field
  the body looks at is recorded too -- one it reads outside `reads` fails the run, naming it. A
  forgotten setting can no longer leave an asset silently un-stale.

What the tests add: the tiny build runs every asset, so every declaration is checked there.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import dagster as dg

from phantom_assets.config import Settings, SettingsSection
from phantom_assets.reads import Reads, not_recorded, recording_reads

ALL_SETTINGS = "*"
"""`reads` entry of an asset that computes with the whole configuration (its hash)."""

__all__ = [
    "ALL_SETTINGS",
    "declared_asset",
    "recorded",
    "setting_values",
    "settings_version",
    "undeclared_reads",
]


def setting_values(settings: Settings, reads: Iterable[str]) -> dict[str, object]:
    """The value of every setting `reads` names, by `section.field` (a section's name stands for
    all of its fields; `ALL_SETTINGS` for every field of every section and the top-level ones)."""
    values: dict[str, object] = {}
    with not_recorded():
        for entry in reads:
            for section, names in _expand(settings, entry):
                for name in names:
                    key = f"{section}.{name}" if section else name
                    owner = getattr(settings, section) if section else settings
                    values[key] = getattr(owner, name)
    return dict(sorted(values.items()))


def _expand(settings: Settings, entry: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    if entry == ALL_SETTINGS:
        for f in dataclasses.fields(settings):
            value = getattr(settings, f.name)
            if isinstance(value, SettingsSection):
                yield f.name, tuple(g.name for g in dataclasses.fields(value))
            elif f.name not in Settings.UNRECORDED:
                yield "", (f.name,)
        return
    section, _, name = entry.partition(".")
    value = getattr(settings, section, None)
    if not isinstance(value, SettingsSection):
        if name or section not in {f.name for f in dataclasses.fields(settings)}:
            raise ValueError(f"{entry!r} names no setting")
        yield "", (section,)
        return
    fields = tuple(f.name for f in dataclasses.fields(value))
    if name and name not in fields:
        raise ValueError(f"{entry!r} names no setting of [{section}]")
    yield section, (name,) if name else fields


def settings_version(code_version: str, values: dict[str, object]) -> str:
    """`code_version` extended by a hash of the settings the asset computes with: changing one of
    them marks exactly the assets that read it stale, and nothing else."""
    payload = json.dumps(values, sort_keys=True, default=str)
    return f"{code_version}-{hashlib.sha256(payload.encode()).hexdigest()[:8]}"


def undeclared_reads(
    reads: Reads,
    own: frozenset[str],
    upstream: frozenset[str],
    hashed: frozenset[str],
    optional: frozenset[str] = frozenset(),
) -> list[str]:
    """What a body read (or failed to read) against its asset's declarations, one sentence each;
    empty when they agree (a dep in `optional` may go unread)."""
    problems = [
        f"reads {name}'s data without depending on it (add the dep)"
        for name in sorted(reads.assets - own - upstream)
    ]
    problems += [
        f"depends on {name} but never reads its data (drop the dep, or read it)"
        for name in sorted(upstream - optional - reads.assets)
    ]
    problems += [
        f"reads the setting {name}, which its code version does not hash (add it to its reads)"
        for name in sorted(reads.settings - hashed)
    ]
    return problems


def recorded(
    body: Callable[..., Any],
    own: Iterable[str],
    upstream: Iterable[str],
    hashed: Iterable[str],
    optional: Iterable[str] = (),
) -> Callable[..., Iterator[Any]]:
    """`body` (returning or yielding Dagster results) with its reads recorded and checked against
    its asset's keys `own`, its `upstream` assets (those in `optional` may go unread) and its
    `hashed` settings (a mismatch fails the step after its outputs, `undeclared_reads`)."""
    own, upstream, hashed = frozenset(own), frozenset(upstream), frozenset(hashed)
    optional = frozenset(optional)

    @functools.wraps(body)
    def run(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with recording_reads() as reads:
            result = body(*args, **kwargs)
            if inspect.isgenerator(result):
                yield from result
            elif result is not None:
                yield result
        problems = undeclared_reads(reads, own, upstream, hashed, optional)
        if problems:
            raise dg.Failure(
                description=f"{', '.join(sorted(own))}: {'; '.join(problems)}",
                allow_retries=False,
            )

    run.__phantom_declared__ = (own, upstream, hashed)  # type: ignore[attr-defined]
    return run


def _dep_name(dep: str | dg.AssetDep) -> str:
    return dep if isinstance(dep, str) else dep.asset_key.to_user_string()


def declared_asset(
    *,
    settings: Settings,
    code: str,
    reads: Sequence[str] = (),
    deps: Sequence[str | dg.AssetDep] = (),
    read_by_some_partitions: Sequence[str] = (),
    **asset_kwargs: Any,
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """`dg.asset(deps=deps, code_version=…, **asset_kwargs)` over the recorded body (module
    docstring): the code version is `code` with the values of `reads`. A dep named in
    `read_by_some_partitions` may go unread by a partition (one tier's input, not another's); a
    read of it still needs the dep."""
    values = setting_values(settings, reads)
    some = set(read_by_some_partitions)

    def decorate(body: Callable[..., Any]) -> dg.AssetsDefinition:
        name = asset_kwargs.get("name") or body.__name__
        upstream = {_dep_name(dep) for dep in deps}
        if not some <= upstream:
            raise ValueError(f"{name}: {sorted(some - upstream)} are not among its deps")
        checked = recorded(body, {name}, upstream, values, optional=some)
        return dg.asset(
            deps=list(deps), code_version=settings_version(code, values), **asset_kwargs
        )(checked)

    return decorate
