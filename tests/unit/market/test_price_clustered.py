"""Clustered inference of the price model: CR3 = the cluster jackknife, Bell-McCaffrey df."""

from __future__ import annotations

import numpy as np
import pytest

from phantom_assets.market.prices.clustered import _mean_df, cluster_mean, cluster_vcov, group_means


def design(seed: int = 0, clusters: int = 12):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, clusters)
    g = np.repeat(np.arange(clusters), sizes)
    x = np.column_stack(
        [np.ones(g.size), rng.normal(size=g.size) + 0.5 * rng.normal(size=clusters)[g]]
    )
    y = x @ [1.0, 2.0] + rng.normal(size=clusters)[g] + rng.normal(size=g.size)
    return x, y, g


def test_cluster_vcov_is_the_leave_one_cluster_out_jackknife_of_ols():
    x, y, g = design()
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    vcov, _, _ = cluster_vcov(x, y - x @ beta, g)
    drops = np.array([np.linalg.lstsq(x[g != c], y[g != c], rcond=None)[0] for c in range(12)])
    jackknife = 11 / 12 * (drops - beta).T @ (drops - beta)
    np.testing.assert_allclose(vcov, jackknife, rtol=1e-9)


def test_cluster_vcov_df_match_the_dense_imbens_kolesar_formula():
    x, y, g = design(1)
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    _, df, adjusted = cluster_vcov(x, y - x @ beta, g)
    binv = np.linalg.inv(x.T @ x)
    hat = x @ binv @ x.T
    proj = np.eye(g.size) - hat
    expected = []
    for c in range(2):  # one dense N × G matrix per coefficient
        cols = []
        for k in range(12):  # one column per cluster
            rows = np.flatnonzero(g == k)
            lam, vec = np.linalg.eigh(proj[np.ix_(rows, rows)])
            a = vec @ np.diag(lam**-0.5) @ vec.T
            cols.append(proj[rows].T @ a @ x[rows] @ binv[:, c])
        m = np.column_stack(cols).T @ np.column_stack(cols)
        expected.append(np.trace(m) ** 2 / np.sum(m * m))
    np.testing.assert_allclose(df, expected, rtol=1e-9)
    assert np.all(df < 11)  # unequal clusters: fewer than G - 1 df
    assert adjusted.shape == y.shape


@pytest.mark.parametrize("kappa", [0.0, 0.4, 3.0])
def test_mean_df_in_linear_time_equals_the_dense_random_effects_formula(kappa):
    n = np.random.default_rng(2).integers(1, 30, 15).astype(float)
    total = n.sum()
    c = np.diag(n) - np.outer(n, n) / total
    m = (c + kappa * c @ c) / np.sqrt(np.outer(1 - n / total, 1 - n / total))
    assert _mean_df(n, kappa) == pytest.approx(np.trace(m) ** 2 / np.sum(m * m), rel=1e-10)
    assert _mean_df(np.full(9, 4.0), kappa) == pytest.approx(8.0)  # equal sizes: G - 1


def test_cluster_mean_and_group_means_agree_for_one_group():
    _x, y, g = design(3)
    mean, se, _df, clusters = cluster_mean(y, g)
    means, ses, _dfs, _ = group_means(y, np.zeros(y.size, dtype=np.int64), g, 1)
    assert clusters == 12 and mean == pytest.approx(means[0]) and se == pytest.approx(ses[0])
    assert np.isnan(cluster_mean(y[g == 0], g[g == 0])[1])  # one cluster: no SE
