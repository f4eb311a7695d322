"""Code versions follow an asset's logic, not its formatting
(docs/architecture.md#code-versions-and-data-versions)."""

from __future__ import annotations

from pathlib import Path

from phantom_assets.assets.metadata import logic_of

SOURCE = '''"""A module."""

def markup(level: float, m: float) -> float:
    """The quote's factor."""
    return level * (1 + m)  # the engagement markup
'''


def _logic(tmp_path: Path, name: str, text: str) -> bytes:
    path = tmp_path / name
    path.write_text(text)
    return logic_of(path)


def test_formatting_comments_and_docstrings_leave_the_logic_as_it_was(tmp_path: Path):
    reformatted = (
        "def markup(\n    level: float,\n    m: float,\n) -> float:\n"
        '    """Another wording."""\n    # a comment\n    return level * (1 + m)\n'
    )
    assert _logic(tmp_path, "a.py", SOURCE) == _logic(tmp_path, "b.py", reformatted)


def test_a_change_of_logic_changes_it(tmp_path: Path):
    changed = SOURCE.replace("(1 + m)", "(1 - m)")
    assert _logic(tmp_path, "a.py", SOURCE) != _logic(tmp_path, "b.py", changed)
    # A string that is a value, not a docstring, is logic.
    valued = SOURCE.replace("return level", 'label = "x"\n    return level')
    assert _logic(tmp_path, "c.py", valued) != _logic(
        tmp_path, "d.py", valued.replace('"x"', '"y"')
    )
