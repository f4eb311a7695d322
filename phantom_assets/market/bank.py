"""Per-class banks of sessions with their quote-time statistics
(docs/method.md#shoppers-and-session-banks).

Sessions do not depend on prices, so each class's bank is built once when the market is compiled
and every step only *indexes* it. Two kinds (`MarketConfig.bank`): the store's own labelled
sessions (`session_bank`, the default: each scored by the fold kernels fitted without it, so its
f is out of fold) or chains sampled from the fitted kernels and scored by them (`build_chain_bank`:
in-model detection, optimistic by construction). A session is quoted when it views the product and
the cart locks that price: the quoted view is the last `view_item_page` before the first
`add_item_to_cart` (a session that never adds: its last view; one that adds without a view: the
add; one with neither: its end). Every session carries what the engine and the shop see at that
moment: the engagement s accumulated before the quoted view (in the store's engagement signal,
the weights its price model selected), the running agent score f on the prefix up to and
including it, and the session's whole demand weight (the demand proxy,
docs/method.md#contamination-generator).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.special import expit

from phantom_assets.constants import (
    CART_LOCK_EVENT,
    DEMAND_WEIGHTS,
    END_TOKEN,
    KERNEL_STATES,
    QUOTE_EVENT,
    START_TOKEN,
)
from phantom_assets.contamination.chains import (
    InverseCdf,
    iter_transitions,
    sampling_cdf,
    validate_kernel,
)
from phantom_assets.fingerprint.encoding import Transitions, encode_trajectories

PROB_FLOOR: float = 1e-12
"""Kernel probabilities are floored here before the log, so unseen transitions stay finite."""


@dataclass(frozen=True)
class ChainBank:
    """Quote-time statistics of pre-sampled chains of one class (one entry per chain).

    Attributes:
        engagement: s, the engagement-signal weight of the events before the quoted event (≥ 0).
        score: f, agent probability σ(a + b·gap) of the prefix up to and including the quoted
            event (the whole chain when it is never quoted in-chain).
        weight: demand weight of the whole chain (the demand proxy it contributes).
    """

    engagement: np.ndarray
    score: np.ndarray
    weight: np.ndarray

    def __post_init__(self) -> None:
        """Coerce to read-only float64 arrays of one length."""
        sizes = set()
        for name in ("engagement", "score", "weight"):
            arr = np.array(getattr(self, name), dtype=np.float64, copy=True)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
            sizes.add(arr.shape)
        if len(sizes) != 1 or len(next(iter(sizes))) != 1 or not self.size:
            raise ValueError(f"bank arrays must be 1-D, non-empty and of one length: {sizes}")
        if np.any(self.engagement < 0) or np.any((self.score < 0) | (self.score > 1)):
            raise ValueError("bank engagement must be >= 0 and scores in [0, 1]")

    @property
    def size(self) -> int:
        """Number of chains in the bank."""
        return int(self.engagement.size)


def _llr(kernel_human: np.ndarray, kernel_agent: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(kernel_agent, PROB_FLOOR)) - np.log(
        np.maximum(kernel_human, PROB_FLOOR)
    )


def state_weights(
    states: tuple[str, ...], weights: dict[str, float] = DEMAND_WEIGHTS
) -> np.ndarray:
    """Weight per kernel state of an event weighting (default the demand proxy,
    `constants.DEMAND_WEIGHTS`; an engagement signal's weights likewise); tokens weigh 0."""
    unknown = [s for s in states if s not in weights and s not in (START_TOKEN, END_TOKEN)]
    if unknown:
        raise ValueError(f"no weight for states {unknown}")
    return np.array([weights.get(s, 0.0) for s in states], dtype=np.float64)


@dataclass(frozen=True)
class BankTables:
    """Per-class lookup tables for `build_chain_bank`, built once per kernel pair.

    Attributes:
        sampler: inverse-CDF sampler of the generating kernel.
        llr: (S·S,) log K_A − log K_H per move (source·S + destination).
        weight: (S·S,) demand weight of each move's destination.
        signal: (S·S,) engagement-signal weight of each move's destination.
        views: (S·S,) True where the move lands on the quoted view event.
        locks: (S·S,) True where the move lands on the cart-lock event.
        start: index of `<start>`.
        end: index of `<end>`.
    """

    sampler: InverseCdf
    llr: np.ndarray
    weight: np.ndarray
    signal: np.ndarray
    views: np.ndarray
    locks: np.ndarray
    start: int
    end: int


def bank_tables(
    kernel: np.ndarray,
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    states: tuple[str, ...],
    signal: dict[str, float] = DEMAND_WEIGHTS,
) -> BankTables:
    """Precompute the tables of one class: `kernel` generates, the fitted pair scores, `signal`
    weighs the engagement before the quote (default: the demand proxy)."""
    start, end = states.index(START_TOKEN), states.index(END_TOKEN)
    for name, matrix in (
        ("kernel", kernel),
        ("kernel_human", kernel_human),
        ("kernel_agent", kernel_agent),
    ):
        validate_kernel(np.asarray(matrix, dtype=np.float64), name, n_states=len(states))
    n_states = len(states)
    dst = np.tile(np.arange(n_states), n_states)
    return BankTables(
        sampler=sampling_cdf(kernel, start, end),
        llr=_llr(kernel_human, kernel_agent).ravel(),
        weight=state_weights(states)[dst],
        signal=state_weights(states, signal)[dst],
        views=dst == states.index(QUOTE_EVENT),
        locks=dst == states.index(CART_LOCK_EVENT),
        start=start,
        end=end,
    )


def build_chain_bank(
    tables: BankTables,
    size: int,
    rng: np.random.Generator,
    max_len: int = 64,
    f_coef: tuple[float, float] = (0.0, 1.0),
) -> ChainBank:
    """Sample `size` chains and compute their quote-time statistics without an event matrix.

    Each transition of the walk (`iter_transitions`, in position order) becomes one record
    (chain, move); per-chain statistics are `np.bincount` sums over the records before (engagement)
    or up to (score) each chain's quoted view. For the same generator state the chains are those
    of `sample_chains`, and a chain that is never quoted in-chain gets `detector_gaps`' score.

    Args:
        tables: the class's `bank_tables`.
        size: number of chains.
        rng: randomness source.
        max_len: maximum events per chain.
        f_coef: (a, b) of f = σ(a + b·gap): (0, 1/T) for the temperature score, the logistic fit
            otherwise.
    """
    if size < 1 or max_len < 1:
        raise ValueError(f"size and max_len must be >= 1, got {size}, {max_len}")
    n_states = tables.sampler.cdf.shape[0]
    chain_parts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    move_parts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    for _, chains, src, dst in iter_transitions(
        tables.sampler, size, rng, max_len, start=tables.start, end=tables.end
    ):
        chain_parts.append(chains)
        move_parts.append(src * n_states + dst)
    chain, move = np.concatenate(chain_parts), np.concatenate(move_parts)
    return _quote_time_statistics(chain, move, tables.llr[move], tables, size, f_coef)


def session_bank(
    trajectories: pl.Series,
    folds: np.ndarray,
    fold_llr: np.ndarray,
    tables: BankTables,
    f_coef: tuple[float, float] = (0.0, 1.0),
) -> ChainBank:
    """The quote-time statistics of real sessions, each scored out of fold.

    Args:
        trajectories: list[str] event names per session (no `<start>`/`<end>`), e.g. the
            `trajectory` column of `labeled_sessions`.
        folds: (n,) each session's fold.
        fold_llr: (k, S·S) log K_A − log K_H per move of the class kernels fitted *without* fold
            j (`fold_log_ratios`): a session is scored by kernels that never saw it.
        tables: the class's `bank_tables` (signal and demand weights, quote events).
        f_coef: (a, b) of the store's selected f = σ(a + b·gap).

    Raises:
        ValueError: if a fold has no kernel or the lengths disagree.
    """
    folds = np.asarray(folds, dtype=np.int64)
    if folds.shape != (len(trajectories),) or (folds.size and folds.max() >= len(fold_llr)):
        raise ValueError(
            f"need one fold in [0, {len(fold_llr)}) per session, got shape "
            f"{folds.shape} for {len(trajectories)} sessions"
        )
    if folds.size and folds.min() < 0:
        raise ValueError(f"fold ids must be >= 0, got {folds.min()}")
    encoded = encode_trajectories(trajectories)
    n_states = int(np.sqrt(tables.llr.size))
    move = encoded.src * n_states + encoded.dst
    llr = np.asarray(fold_llr)[folds[encoded.session], move]
    return _quote_time_statistics(encoded.session, move, llr, tables, len(trajectories), f_coef)


def fold_log_ratios(
    human_folds: Sequence[np.ndarray], agent_folds: Sequence[np.ndarray]
) -> np.ndarray:
    """(k, S·S) log K_A − log K_H per move of each fold's pair of class kernels."""
    if len(human_folds) != len(agent_folds) or not human_folds:
        raise ValueError(
            f"need as many human as agent fold kernels (>= 1), got "
            f"{len(human_folds)} and {len(agent_folds)}"
        )
    return np.stack([_llr(h, a).ravel() for h, a in zip(human_folds, agent_folds, strict=True)])


def _quote_time_statistics(
    chain: np.ndarray,
    move: np.ndarray,
    llr: np.ndarray,
    tables: BankTables,
    size: int,
    f_coef: tuple[float, float],
) -> ChainBank:
    """Engagement before, score up to and weight of each chain's quote, from its transition
    records (each chain's records in position order; `llr` per record)."""
    record = np.arange(chain.size)
    quote_at = _quote_records(chain, tables.views[move], tables.locks[move], size)
    before = record < quote_at[chain]
    prefix = record <= quote_at[chain]
    signal = tables.signal[move]
    llr_sum = np.bincount(chain, weights=np.where(prefix, llr, 0.0), minlength=size)
    n_prefix = np.bincount(chain, weights=prefix, minlength=size)
    return ChainBank(
        engagement=np.bincount(chain, weights=np.where(before, signal, 0.0), minlength=size),
        score=expit(f_coef[0] + f_coef[1] * llr_sum / np.maximum(n_prefix, 1)),
        weight=np.bincount(chain, weights=tables.weight[move], minlength=size),
    )


def _quote_records(
    chain: np.ndarray, is_view: np.ndarray, is_lock: np.ndarray, size: int
) -> np.ndarray:
    """Per chain, the record of its quote (module docstring), `chain.size` when it is quoted at
    its end; `is_view`/`is_lock`: whether each record lands on the quoted view / the lock."""
    record = np.arange(chain.size)
    lock_at = _first_record(chain, np.flatnonzero(is_lock), size, chain.size)
    views = np.flatnonzero(is_view & (record < lock_at[chain]))
    last_view = _first_record(chain, views[::-1], size, -1)
    # No view before the lock: quoted at the lock; neither: at the end (after every record).
    return np.where(last_view >= 0, last_view, lock_at)


def quote_prefix_moves(encoded: Transitions, states: tuple[str, ...] = KERNEL_STATES) -> np.ndarray:
    """(n,) moves of each session up to and including its quote (the market's rule, module
    docstring): `<start>` → e_1 is move 1, so a session quoted at its i-th event (1-based) has i;
    one quoted at its end has all n_events + 1 (the move to `<end>` included)."""
    size = encoded.n_sessions
    quote_at = _quote_records(
        encoded.session,
        encoded.dst == states.index(QUOTE_EVENT),
        encoded.dst == states.index(CART_LOCK_EVENT),
        size,
    )
    first = np.concatenate([[0], np.cumsum(encoded.n_events + 1)[:-1]])
    return np.where(quote_at < encoded.session.size, quote_at - first + 1, encoded.n_events + 1)


def _first_record(chain: np.ndarray, records: np.ndarray, size: int, missing: int) -> np.ndarray:
    """Per chain, the first of `records` (in the given order) that belongs to it, else `missing`."""
    first = np.full(size, missing)
    chains, index = np.unique(chain[records], return_index=True)
    first[chains] = records[index]
    return first
