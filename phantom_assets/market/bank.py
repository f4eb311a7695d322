"""Per-class banks of pre-sampled event chains with their quote-time statistics (DESIGN §5 v2).

Event chains do not depend on prices, so each class's chains are sampled once when the market is
compiled and every step only *indexes* the bank. A session is quoted when it views the product and
the cart locks that price: the quoted view is the last `view_item_page` before the first
`add_item_to_cart` (a session that never adds: its last view; one that adds without a view: the add;
one with neither: its end). Every chain carries what the engine and the shop see at that moment:
the engagement s accumulated before the quoted view (the demand-proxy weights of its events,
DESIGN §5 G(α)), the running agent score f on the prefix up to and including it, and the chain's
whole demand weight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from phantom_assets.constants import DEMAND_WEIGHTS, END_TOKEN, START_TOKEN
from phantom_assets.contamination.chains import (
    PAD,
    InverseCdf,
    iter_transitions,
    sampling_cdf,
    validate_kernel,
)

PROB_FLOOR: float = 1e-12
"""Kernel probabilities are floored here before the log, so unseen transitions stay finite."""
QUOTED_VIEW: str = "view_item_page"
"""A session is quoted when it views the product..."""
CART_LOCK: str = "add_item_to_cart"
"""...and the cart locks that price: the quote is the last product view before the first add."""


@dataclass(frozen=True)
class ChainBank:
    """Quote-time statistics of pre-sampled chains of one class (one entry per chain).

    Attributes:
        engagement: s, demand weight of the events before the quoted event (≥ 0).
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


def detector_gaps(
    codes: np.ndarray,
    lengths: np.ndarray,
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    start: int = 0,
    end: int | None = None,
) -> np.ndarray:
    """Δ_H − Δ_A of each whole chain from its own empirical transitions, vectorized.

    With the session's empirical kernel T̂_τ and visit weights w_a,
    Δ_Y = Σ_a w_a/Σw · KL(T̂_τ[a] ‖ K_Y[a]); the entropy term cancels in the difference, leaving the
    mean over the chain's transitions (including `<start>`→first and last→`<end>`) of
    log K_A[a, b] − log K_H[a, b]. (The reference implementation the bank's prefix scores are
    tested against.)

    Args:
        codes: (n, L) int state indices padded with `PAD` (as from `sample_chains`).
        lengths: (n,) events per chain.
        kernel_human: (S, S) fitted human kernel.
        kernel_agent: (S, S) fitted agent kernel.
        start: index of `<start>`.
        end: index of `<end>` (default S - 1).

    Returns:
        float64 (n,) gaps.
    """
    size = kernel_human.shape[0]
    stop = size - 1 if end is None else end
    n, width = codes.shape
    seq = np.full((n, width + 2), PAD, dtype=np.int64)
    seq[:, 0] = start
    seq[:, 1 : width + 1] = codes
    seq[np.arange(n), np.asarray(lengths, dtype=np.int64) + 1] = stop
    src, dst = seq[:, :-1], seq[:, 1:]
    valid = dst != PAD
    llr = _llr(kernel_human, kernel_agent)
    terms = np.where(valid, llr[np.where(valid, src, 0), np.where(valid, dst, 0)], 0.0)
    return terms.sum(axis=1) / valid.sum(axis=1)


def detector_scores(
    codes: np.ndarray,
    lengths: np.ndarray,
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    f_coef: tuple[float, float] = (0.0, 1.0),
) -> np.ndarray:
    """Agent probability f = σ(a + b·(Δ_H − Δ_A)) of each whole chain (see `detector_gaps`);
    `f_coef` = (a, b), (0, 1/T) for the temperature score."""
    return expit(f_coef[0] + f_coef[1] * detector_gaps(codes, lengths, kernel_human, kernel_agent))


def _llr(kernel_human: np.ndarray, kernel_agent: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(kernel_agent, PROB_FLOOR)) - np.log(
        np.maximum(kernel_human, PROB_FLOOR)
    )


def state_weights(states: tuple[str, ...]) -> np.ndarray:
    """Demand weight per kernel state (`constants.DEMAND_WEIGHTS`; tokens weigh 0)."""
    unknown = [s for s in states if s not in DEMAND_WEIGHTS and s not in (START_TOKEN, END_TOKEN)]
    if unknown:
        raise ValueError(f"no demand weight for states {unknown}")
    return np.array([DEMAND_WEIGHTS.get(s, 0.0) for s in states], dtype=np.float64)


@dataclass(frozen=True)
class BankTables:
    """Per-class lookup tables for `build_chain_bank`, built once per kernel pair.

    Attributes:
        sampler: inverse-CDF sampler of the generating kernel.
        llr: (S·S,) log K_A − log K_H per move (source·S + destination).
        weight: (S·S,) demand weight of each move's destination.
        views: (S·S,) True where the move lands on the quoted view event.
        locks: (S·S,) True where the move lands on the cart-lock event.
        start: index of `<start>`.
        end: index of `<end>`.
    """

    sampler: InverseCdf
    llr: np.ndarray
    weight: np.ndarray
    views: np.ndarray
    locks: np.ndarray
    start: int
    end: int


def bank_tables(
    kernel: np.ndarray,
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    states: tuple[str, ...],
) -> BankTables:
    """Precompute the tables of one class: `kernel` generates, the fitted pair scores."""
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
        views=dst == states.index(QUOTED_VIEW),
        locks=dst == states.index(CART_LOCK),
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
    record = np.arange(chain.size)
    lock_at = _first_record(chain, np.flatnonzero(tables.locks[move]), size, chain.size)
    views = np.flatnonzero(tables.views[move] & (record < lock_at[chain]))
    last_view = _first_record(chain, views[::-1], size, -1)
    # No view before the lock: quoted at the lock; neither: at the end (after every record).
    quote_at = np.where(last_view >= 0, last_view, lock_at)
    before = record < quote_at[chain]
    prefix = record <= quote_at[chain]
    weights = tables.weight[move]
    llr_sum = np.bincount(chain, weights=np.where(prefix, tables.llr[move], 0.0), minlength=size)
    n_prefix = np.bincount(chain, weights=prefix, minlength=size)
    return ChainBank(
        engagement=np.bincount(chain, weights=np.where(before, weights, 0.0), minlength=size),
        score=expit(f_coef[0] + f_coef[1] * llr_sum / np.maximum(n_prefix, 1)),
        weight=np.bincount(chain, weights=weights, minlength=size),
    )


def _first_record(chain: np.ndarray, records: np.ndarray, size: int, missing: int) -> np.ndarray:
    """Per chain, the first of `records` (in the given order) that belongs to it, else `missing`."""
    first = np.full(size, missing)
    chains, index = np.unique(chain[records], return_index=True)
    first[chains] = records[index]
    return first
