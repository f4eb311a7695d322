"""Dagster config types generated from the settings dataclasses.

The launchpad shows every setting as a typed field with its description and default, and the
frozen dataclasses of `phantom_assets.config` (and `TrainingParams`) stay the one place that
defines them: a field's type comes from its annotation, its default from the dataclass, its
description from the `Attributes:` section of the dataclass's docstring (Google style; a line
`a, b: text` describes both). A field the docstring does not describe is an error here, not an
undocumented box in the UI.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import dagster as dg
import pydantic

_ENTRY = re.compile(r"^(?P<names>\w+(?:, \w+)*): (?P<text>.+)$")
_SCALARS = (bool, int, float, str)


def field_descriptions(cls: type, names: Iterable[str] | None = None) -> dict[str, str]:
    """Field name -> description of the `names` fields of `cls` (all by default), from the
    `Attributes:` section of its docstring.

    Raises:
        ValueError: naming the fields the section does not describe.
    """
    lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Attributes:"), len(lines))
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in lines[start + 1 :]:
        if line.strip() and not line.startswith(" "):
            break  # the next section
        entry = _ENTRY.match(line.strip()) if line.startswith("    ") else None
        if entry and not line.startswith("     "):
            current = [entry["text"]]
            found.update((name, current) for name in entry["names"].split(", "))
        elif line.strip():
            current.append(line.strip())
    names = list(names) if names is not None else _field_names(cls)
    missing = [name for name in names if name not in found]
    if missing:
        raise ValueError(
            f"{cls.__name__}'s docstring does not describe {missing} under "
            "`Attributes:`; every field is shown in the launchpad"
        )
    return {name: " ".join(found[name]) for name in names}


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]


def _config_type(annotation: Any) -> Any:
    """The Dagster-compatible type of a dataclass field's annotation (tuples become lists)."""
    if annotation in _SCALARS:
        return annotation
    if annotation is Path:
        return str
    if typing.get_origin(annotation) is tuple:
        return list[_config_type(typing.get_args(annotation)[0])]
    raise TypeError(f"no config type for the settings annotation {annotation!r}")


def _plain(value: Any) -> Any:
    """A dataclass default as config sees it: tuples as lists, paths as strings."""
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return str(value) if isinstance(value, Path) else value


def config_class(
    cls: type,
    *,
    base: type[pydantic.BaseModel] = dg.Config,
    fields: Iterable[str] | None = None,
    defaults: Any = None,
    name: str | None = None,
) -> Any:
    """A `base` subclass (a `dg.Config` or a `dg.ConfigurableResource`) with the `fields` of
    dataclass `cls` (all of them by default), each defaulting to its value in `defaults` (an
    instance of `cls`; default: `cls()`); a field holding a settings dataclass becomes a nested
    config class of its own. Subclass the result to add methods and a docstring."""
    hints = typing.get_type_hints(cls)
    chosen = list(fields) if fields is not None else _field_names(cls)
    descriptions = field_descriptions(cls, chosen)
    values = cls() if defaults is None else defaults
    definitions: dict[str, Any] = {}
    for field_name in chosen:
        annotation, description = hints[field_name], descriptions[field_name]
        value = getattr(values, field_name)
        if dataclasses.is_dataclass(annotation):
            nested = config_class(annotation, defaults=value)
            spec = pydantic.Field(default_factory=nested, description=description)
            definitions[field_name] = (nested, spec)
        else:
            spec = pydantic.Field(default=_plain(value), description=description)
            definitions[field_name] = (_config_type(annotation), spec)
    summary = inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0]
    return pydantic.create_model(
        name or f"{cls.__name__}Fields",
        __base__=base,
        __doc__=summary,
        __module__=__name__,
        **definitions,
    )
