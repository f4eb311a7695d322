"""Stable-hash fold assignment."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from phantom_assets.fingerprint import assign_folds, fnv1a64, stable_hash64


def _fnv1a64_reference(text: str) -> int:
    h = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) % 2**64
    return h


def test_fnv1a64_matches_published_test_vectors() -> None:
    assert fnv1a64(["", "a", "foobar"]).tolist() == [
        0xCBF29CE484222325,
        0xAF63DC4C8601EC8C,
        0x85944171F73967E8,
    ]


def test_fnv1a64_matches_a_scalar_reference_on_unicode_ids() -> None:
    rng = np.random.default_rng(0)
    alphabet = list("abcXYZ019-_éß漢字🙂")
    ids = ["".join(rng.choice(alphabet, size=rng.integers(0, 40))) for _ in range(300)]
    assert fnv1a64(ids).tolist() == [_fnv1a64_reference(s) for s in ids]


def test_assign_folds_is_deterministic_across_input_types_and_neighbours() -> None:
    ids = [f"session-{i}" for i in range(1000)]
    as_list = assign_folds(ids, 5)
    np.testing.assert_array_equal(as_list, assign_folds(pl.Series(ids), 5))
    np.testing.assert_array_equal(as_list, assign_folds(ids[::-1], 5)[::-1])
    np.testing.assert_array_equal(as_list[:10], assign_folds(ids[:10], 5))


def test_assign_folds_pins_the_hash_and_fold_of_known_ids() -> None:
    """Regression: folds are stored with kernels; any change of hash must be deliberate."""
    ids = ["hotel-1", "airline-2", "s0000", "abc"]
    assert stable_hash64(ids).tolist() == [
        0x3CB37204665F58FF,
        0xC7CCAF63936F42B4,
        0x4DBA28F913059AB6,
        0x33EBAF9927CBC5BD,
    ]
    assert assign_folds(ids, 5).tolist() == [2, 1, 2, 2]


@pytest.mark.parametrize("k", [2, 5, 10])
def test_assign_folds_is_roughly_balanced(k: int) -> None:
    folds = assign_folds([f"{i:08x}" for i in range(20_000)], k)
    counts = np.bincount(folds, minlength=k)
    assert folds.min() == 0 and folds.max() == k - 1
    assert stats.chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("bad", [0, 1, -3, 2.5, True])
def test_assign_folds_rejects_a_bad_k(bad: object) -> None:
    with pytest.raises(ValueError, match="k must be"):
        assign_folds(["a", "b"], bad)  # type: ignore[arg-type]


def test_assign_folds_rejects_null_ids() -> None:
    with pytest.raises(ValueError, match="position 1 is null"):
        assign_folds(pl.Series(["a", None]), 5)
