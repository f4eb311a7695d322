"""Chain sampling: orientation, padding, truncation, exact inverse CDF."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from phantom_assets.contamination import PAD, sample_chains, sampling_cdf, validate_kernel

# <start>, A, B, C, <end>: strongly asymmetric (A->B likely, B->A rare), rows = sources.
ASYMMETRIC = np.array(
    [
        [0.0, 1.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.85, 0.05, 0.10],
        [0.0, 0.05, 0.10, 0.60, 0.25],
        [0.0, 0.70, 0.10, 0.0, 0.20],
        [0.0, 0.0, 0.0, 0.0, 1.0],
    ]
)


def transition_counts(codes: np.ndarray, lengths: np.ndarray, size: int) -> np.ndarray:
    """Oracle: count (source, destination) pairs including <start> and <end>, row-wise in numpy."""
    n, width = codes.shape
    seq = np.full((n, width + 2), PAD, dtype=np.int64)
    seq[:, 0] = 0
    seq[:, 1 : width + 1] = codes
    seq[np.arange(n), lengths + 1] = size - 1
    src, dst = seq[:, :-1].ravel(), seq[:, 1:].ravel()
    keep = dst != PAD
    counts = np.zeros((size, size))
    np.add.at(counts, (src[keep], dst[keep]), 1.0)
    return counts


def test_sample_chains_reproduces_the_rows_of_an_asymmetric_kernel():
    """Regression for pitfall 1: a transposed kernel would swap A->B (0.85) and B->A (0.05)."""
    codes, lengths = sample_chains(ASYMMETRIC, 20_000, np.random.default_rng(1))
    counts = transition_counts(codes, lengths, 5)
    assert counts[0, 1] == counts[0].sum() == 20_000
    for row in range(1, 4):
        observed = counts[row]
        support = ASYMMETRIC[row] > 0
        expected = ASYMMETRIC[row][support] * observed.sum()
        assert np.all(observed[~support] == 0)
        assert stats.chisquare(observed[support], expected).pvalue > 1e-3
    estimate = counts[:4] / counts[:4].sum(axis=1, keepdims=True)
    assert estimate[1, 2] == pytest.approx(0.85, abs=0.01)
    assert estimate[2, 1] == pytest.approx(0.05, abs=0.01)


def test_sample_chains_pads_with_minus_one_and_never_returns_the_tokens():
    codes, lengths = sample_chains(ASYMMETRIC, 500, np.random.default_rng(2), max_len=40)
    assert codes.dtype == np.int16 and codes.shape == (500, 40)
    positions = np.arange(40)[None, :]
    assert np.all((codes == PAD) == (positions >= lengths[:, None]))
    events = codes[codes != PAD]
    assert np.all((events >= 1) & (events <= 3))


def test_sample_chains_truncates_chains_that_never_end_at_max_len():
    looping = np.array([[0, 1, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
    codes, lengths = sample_chains(looping, 3, np.random.default_rng(0), max_len=7)
    assert np.all(lengths == 7) and np.all(codes == 1)


@pytest.mark.parametrize("stay", [0.2, 0.5, 0.9])
def test_sample_chains_lengths_follow_the_geometric_law(stay: float):
    kernel = np.array([[0, 1, 0], [0, stay, 1 - stay], [0, 0, 1]], dtype=float)
    _, lengths = sample_chains(kernel, 20_000, np.random.default_rng(3), max_len=500)
    law = stats.geom(1 - stay)
    assert lengths.mean() == pytest.approx(law.mean(), abs=4 * law.std() / np.sqrt(20_000) + 1e-12)


def test_sample_chains_is_deterministic_for_a_seed():
    first = sample_chains(ASYMMETRIC, 300, np.random.default_rng(5))
    second = sample_chains(ASYMMETRIC, 300, np.random.default_rng(5))
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])


def test_sample_chains_never_reenters_start_through_smoothing_mass():
    smoothed = np.full((5, 5), 0.2)
    codes, _ = sample_chains(smoothed, 2_000, np.random.default_rng(6))
    assert not np.any(codes == 0)


def test_inverse_cdf_matches_the_exact_comparison_at_bin_edges_and_cdf_values():
    rng = np.random.default_rng(7)
    kernel = rng.random((6, 6)) * (rng.random((6, 6)) > 0.4)
    kernel[:, -1] += 0.01
    kernel /= kernel.sum(axis=1, keepdims=True)
    sampler = sampling_cdf(kernel, 0, 5)
    edges = np.arange(1024) / 1024
    u = np.concatenate([rng.random(5_000), edges, sampler.cdf[:, :-1].ravel()])
    state = rng.integers(0, 5, u.size)
    exact = (sampler.cdf[state] <= u[:, None]).sum(axis=1)
    assert np.array_equal(sampler(state, u), exact)


def test_validate_kernel_names_the_row_that_does_not_sum_to_one():
    bad = ASYMMETRIC.copy()
    bad[2, 2] += 0.3
    with pytest.raises(ValueError, match="row 2"):
        validate_kernel(bad, n_states=5)


def test_sample_chains_rejects_a_non_square_kernel():
    with pytest.raises(ValueError, match="shape"):
        sample_chains(np.ones((2, 3)) / 3, 5, np.random.default_rng(0))
