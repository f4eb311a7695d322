"""Array core shared by the refit permutation test and the refit bootstrap
(docs/method.md#separability-report).

Both procedures re-run the whole cross-fitting -- class kernels per fold, out-of-fold gaps, AUC --
for many relabelings or reweightings of the same sessions at once. The sessions are held once as
sparse ``(session, src·S+dst, count)`` triples (:class:`SessionCounts`). Only the *cells* the
sessions use matter -- a cell is a (fold, transition) pair -- so the data become a sparse
session × cell matrix M, and a batch of B label rows (times multiplicities) is refitted by sparse
products: class counts per cell = Mᵀ·labels, per transition and per (fold, source) row by two
more sparse aggregations; the held-out counts are totals minus the own fold's, smoothed only on
the used cells; gaps = M·(log-likelihood ratio per cell); then one row-wise weighted ranking.

The gap of a session is Δ_H − Δ_A = (1 / #transitions) Σ_transitions log P_A(b|a) − log P_H(b|a)
with the kernels of its own fold left out, exactly the quantity of :func:`score_sessions`.
Multiplicities ``w`` (a bootstrap's copies of a session) weight the session's counts in the
kernel fit and its pairs in the AUC; copies share the session's fold, so a session never scores
against a kernel that saw any copy of it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl
from scipy import sparse

from phantom_assets.constants import ACTORS, MIN_EVENTS_FOR_KERNEL
from phantom_assets.fingerprint.encoding import N_STATES, encode_trajectories
from phantom_assets.fingerprint.folds import stable_hash64
from phantom_assets.fingerprint.kernels import N_DESTINATIONS
from phantom_assets.fingerprint.sessions import validate_sessions
from phantom_assets.fingerprint.statistics import weighted_row_auc

logger = logging.getLogger(__name__)

CELLS = N_STATES * N_STATES
_CHUNK_CELLS = 8_000_000  # bounds the memory of one vectorized batch

__all__ = [
    "CellIndex",
    "FoldCounts",
    "SessionCounts",
    "batch_size",
    "class_totals",
    "counts_from_codes",
    "fold_counts",
    "oof_aucs",
    "oof_gaps",
    "session_counts",
]


@dataclass(frozen=True, eq=False)
class CellIndex:
    """Sparse operators over the cells the sessions use (see :attr:`SessionCounts.cells`).

    Attributes:
        fit: ``(C, n)`` counts of each eligible session in each cell (sessions fitting kernels).
        score: ``(n, C)`` counts of each session in each cell, divided by its transitions.
        to_pair: ``(Q, C)`` sums cells into their transition (all folds).
        to_row: ``(R, C)`` sums cells into their (fold, source) row.
        row_to_source: ``(S, R)`` sums (fold, source) rows into their source state.
        pair_of_cell: Index of each cell's transition (into ``pairs``).
        row_of_cell: Index of each cell's (fold, source) row.
        source_of_cell: Source state of each cell.
        pairs: Distinct transition codes ``src * S + dst``.
    """

    fit: sparse.csr_array
    score: sparse.csr_array
    to_pair: sparse.csr_array
    to_row: sparse.csr_array
    row_to_source: sparse.csr_array
    pair_of_cell: np.ndarray
    row_of_cell: np.ndarray
    source_of_cell: np.ndarray
    pairs: np.ndarray


def _indicator(target: np.ndarray, n_targets: int) -> sparse.csr_array:
    """``(n_targets, len(target))`` 0/1 matrix summing column i into row ``target[i]``."""
    indptr = np.concatenate([[0], np.cumsum(np.bincount(target, minlength=n_targets))])
    columns = np.argsort(target, kind="stable")
    return sparse.csr_array((np.ones(target.size), columns, indptr), shape=(n_targets, target.size))


@dataclass(frozen=True, eq=False)
class SessionCounts:
    """Labeled sessions as sparse transition counts plus their experiment structure.

    Attributes:
        session: Session index of each sparse count (sorted by session, then pair).
        pair: ``src * S + dst`` of each count.
        count: The counts (float64).
        fold: Fold id per session, in ``[0, k)``.
        eligible: Per session, whether it fits kernels (>= ``MIN_EVENTS_FOR_KERNEL`` events).
        n_transitions: Transitions per session (events + 1), float64.
        experiment: Dense experiment code per session (0..E-1).
        experiment_hash: Stable 64-bit hash per experiment code (picks the test session).
        is_agent: Label per session (constant within an experiment).
    """

    session: np.ndarray
    pair: np.ndarray
    count: np.ndarray
    fold: np.ndarray
    eligible: np.ndarray
    n_transitions: np.ndarray
    experiment: np.ndarray
    experiment_hash: np.ndarray
    is_agent: np.ndarray

    @property
    def n_sessions(self) -> int:
        """Number of sessions."""
        return int(self.fold.size)

    @cached_property
    def cells(self) -> CellIndex:
        """Sparse operators over the distinct (fold, transition) cells the sessions use."""
        code = self.fold[self.session] * CELLS + self.pair
        cell_code, cell = np.unique(code, return_inverse=True)
        cell, n_cells, n = cell.ravel(), cell_code.size, self.n_sessions
        pairs, pair_of_cell = np.unique(cell_code % CELLS, return_inverse=True)
        source = (cell_code % CELLS) // N_STATES
        row_key = cell_code // CELLS * N_STATES + source
        row_code, row_of_cell = np.unique(row_key, return_inverse=True)
        fit = self.count * self.eligible[self.session]
        return CellIndex(
            fit=sparse.csr_array((fit, (cell, self.session)), shape=(n_cells, n)),
            score=sparse.csr_array(
                (self.count / self.n_transitions[self.session], (self.session, cell)),
                shape=(n, n_cells),
            ),
            to_pair=_indicator(pair_of_cell.ravel(), pairs.size),
            to_row=_indicator(row_of_cell.ravel(), row_code.size),
            row_to_source=_indicator(row_code % N_STATES, N_STATES),
            pair_of_cell=pair_of_cell.ravel(),
            row_of_cell=row_of_cell.ravel(),
            source_of_cell=source,
            pairs=pairs,
        )

    def select(self, index: np.ndarray) -> SessionCounts:
        """The sessions ``index`` (in that order), renumbered; experiment codes are kept."""
        index = np.asarray(index, dtype=np.int64)
        new = np.full(self.n_sessions, -1, dtype=np.int64)
        new[index] = np.arange(index.size)
        keep = new[self.session] >= 0
        order = np.lexsort((self.pair[keep], new[self.session[keep]]))
        return SessionCounts(
            session=new[self.session[keep]][order],
            pair=self.pair[keep][order],
            count=self.count[keep][order],
            fold=self.fold[index],
            eligible=self.eligible[index],
            n_transitions=self.n_transitions[index],
            experiment=self.experiment[index],
            experiment_hash=self.experiment_hash,
            is_agent=self.is_agent[index],
        )


def counts_from_codes(
    session: np.ndarray, src: np.ndarray, dst: np.ndarray, n_events: np.ndarray, **per_session
) -> SessionCounts:
    """:class:`SessionCounts` from flat transitions (session, src, dst per transition), events
    per session and the per-session ``fold``, ``experiment``, ``is_agent`` arrays (keywords), plus
    ``experiment_hash`` per experiment code."""
    keys, counts = np.unique(session * CELLS + src * N_STATES + dst, return_counts=True)
    n_events = np.asarray(n_events, dtype=np.int64)
    experiment = np.asarray(per_session["experiment"], dtype=np.int64)
    is_agent = np.asarray(per_session["is_agent"], dtype=bool)
    mixed = np.bincount(experiment, weights=is_agent) % np.maximum(np.bincount(experiment), 1)
    if mixed.any():
        raise ValueError(f"experiment code {int(np.flatnonzero(mixed)[0])} mixes actor labels")
    return SessionCounts(
        session=keys // CELLS,
        pair=keys % CELLS,
        count=counts.astype(np.float64),
        fold=np.asarray(per_session["fold"], dtype=np.int64),
        eligible=n_events >= MIN_EVENTS_FOR_KERNEL,
        n_transitions=(n_events + 1).astype(np.float64),
        experiment=experiment,
        experiment_hash=np.asarray(per_session["experiment_hash"], dtype=np.uint64),
        is_agent=is_agent,
    )


def session_counts(sessions: pl.DataFrame, k: int) -> SessionCounts:
    """The labeled sessions of a sessions frame as :class:`SessionCounts`.

    Experiments come from an ``experiment_id`` column (a null id, or no column, makes the session
    its own experiment). Sessions are ordered by (experiment id, session id), so the session a
    hash picks within an experiment never depends on the frame's row order.
    """
    validate_sessions(sessions, k)
    labeled = sessions.filter(pl.col("actor").is_in(list(ACTORS)))
    xp = (
        labeled["experiment_id"].cast(pl.String).fill_null(labeled["session_id"])
        if "experiment_id" in labeled.columns
        else labeled["session_id"]
    )
    labeled = labeled.with_columns(xp.alias("_xp")).sort("_xp", "session_id")
    names, experiment = np.unique(labeled["_xp"].to_numpy().astype(str), return_inverse=True)
    t = encode_trajectories(labeled["trajectory"])
    return counts_from_codes(
        t.session,
        t.src,
        t.dst,
        t.n_events,
        fold=labeled["fold"].to_numpy(),
        experiment=experiment.ravel(),
        experiment_hash=stable_hash64(pl.Series(names.tolist(), dtype=pl.String)),
        is_agent=(labeled["actor"] == ACTORS[1]).to_numpy(),
    )


def batch_size(data: SessionCounts) -> int:
    """Rows per vectorized batch so one batch stays within the memory bound."""
    return max(1, _CHUNK_CELLS // max(data.pair.size, data.n_sessions))


@dataclass(frozen=True, eq=False)
class FoldCounts:
    """Class transition counts of B label rows on the used cells (class 0 human, 1 agent).

    Attributes:
        cell: ``(C, 2, B)`` count of the class in each cell (its fold, its transition).
        pair: ``(Q, 2, B)`` count of the class at each transition, all folds.
        row: ``(R, 2, B)`` transitions of the class out of each (fold, source) row.
        source: ``(S, 2, B)`` transitions of the class out of each source, all folds.
    """

    cell: np.ndarray
    pair: np.ndarray
    row: np.ndarray
    source: np.ndarray


def fold_counts(data: SessionCounts, labels: np.ndarray, weights: np.ndarray | None) -> FoldCounts:
    """Counts per label row ((B, n), 1 = agent) that refit every fold kernel of both classes.

    Only eligible sessions count; ``weights`` ((B, n) multiplicities) scale each session's counts.
    """
    index = data.cells
    agent = np.asarray(labels, dtype=np.float64)
    w = np.ones_like(agent) if weights is None else np.asarray(weights, dtype=np.float64)
    by_class = np.concatenate([(w * (1.0 - agent)).T, (w * agent).T], axis=1)  # (n, 2B)
    cell = index.fit @ by_class
    pair, row = index.to_pair @ cell, index.to_row @ cell
    source = index.row_to_source @ row
    b = agent.shape[0]
    return FoldCounts(*(m.reshape(m.shape[0], 2, b) for m in (cell, pair, row, source)))


def class_totals(data: SessionCounts, counts: FoldCounts) -> np.ndarray:
    """``(B, 2, S, S)`` dense class transition counts over all folds."""
    b = counts.pair.shape[2]
    dense = np.zeros((b, 2, CELLS))
    dense[:, :, data.cells.pairs] = counts.pair.transpose(2, 1, 0)
    return dense.reshape(b, 2, N_STATES, N_STATES)


def oof_gaps(data: SessionCounts, counts: FoldCounts, kappa: float) -> np.ndarray:
    """``(B, n)`` out-of-fold gaps from :func:`fold_counts` output (κ > 0).

    Only the cells some session uses are smoothed: with κ > 0, P(b|a) = (N(a,b) + κ) /
    (Σ_c N(a,c) + κ·|V|) for every used cell (no session leaves ``<end>`` or enters
    ``<start>``), the formula of :func:`probs_from_counts`, with N the counts outside the fold.
    """
    index = data.cells
    n_ab = counts.pair[index.pair_of_cell] - counts.cell  # held-out counts, (C, 2, B)
    n_ab += kappa
    n_a = counts.source[index.source_of_cell] - counts.row[index.row_of_cell]
    n_a += kappa * N_DESTINATIONS
    ratio = n_ab[:, 1] * n_a[:, 0]
    ratio /= n_a[:, 1]
    ratio /= n_ab[:, 0]
    llr = np.log(ratio, out=ratio)  # log P_A - log P_H of each used cell, (C, B)
    return (index.score @ llr).T


def oof_aucs(
    data: SessionCounts, labels: np.ndarray, kappa: float, weights: np.ndarray | None = None
) -> np.ndarray:
    """Out-of-fold AUC for each row of ``labels`` ((B, n), 1 = agent), refitting every kernel."""
    labels = np.atleast_2d(np.asarray(labels, dtype=np.int64))
    out = np.empty(labels.shape[0])
    step = batch_size(data)
    for start in range(0, labels.shape[0], step):  # loop over batches of label rows
        part = slice(start, start + step)
        w = None if weights is None else np.atleast_2d(weights)[part]
        gaps = oof_gaps(data, fold_counts(data, labels[part], w), kappa)
        out[part] = weighted_row_auc(gaps, labels[part], np.ones_like(gaps) if w is None else w)
    return out
