"""Per-class banks of pre-sampled event chains with precomputed statistics (DESIGN §5).

Event chains do not depend on prices, so the env samples a large bank per class at every reset and
each step only *indexes* it. Every chain carries its detector score f, demand weight, cart count
and whether it ends in a purchase.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from phantom_assets.constants import CART_EVENTS, DEMAND_WEIGHTS, END_TOKEN, START_TOKEN
from phantom_assets.contamination.chains import (
    PAD,
    InverseCdf,
    iter_transitions,
    sampling_cdf,
    validate_kernel,
)

PROB_FLOOR: float = 1e-12
"""Kernel probabilities are floored here before the log, so unseen transitions stay finite."""


@dataclass(frozen=True)
class ChainBank:
    """Statistics of pre-sampled chains of one class (all arrays have one entry per chain).

    Attributes:
        f: detector score σ((Δ_H − Δ_A)/T) of the chain.
        weight: demand weight Σ w(event) of the chain's events.
        n_cart: number of cart-like events.
        reaches_cart: the chain contains add_item_to_cart.
        buys: the chain contains purchase_complete, or add_item_to_cart followed by checkout_start.
        lengths: number of events.
    """

    f: np.ndarray
    weight: np.ndarray
    n_cart: np.ndarray
    reaches_cart: np.ndarray
    buys: np.ndarray
    lengths: np.ndarray

    @property
    def size(self) -> int:
        """Number of chains in the bank."""
        return int(self.f.size)


def detector_gaps(
    codes: np.ndarray,
    lengths: np.ndarray,
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    start: int = 0,
    end: int | None = None,
) -> np.ndarray:
    """Δ_H − Δ_A of each chain from its own empirical transitions, vectorized.

    With the session's empirical kernel T̂_τ and visit weights w_a,
    Δ_Y = Σ_a w_a/Σw · KL(T̂_τ[a] ‖ K_Y[a]); the entropy term cancels in the difference, leaving the
    mean over the chain's transitions (including `<start>`→first and last→`<end>`) of
    log K_A[a, b] − log K_H[a, b].

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
    llr = np.log(np.maximum(kernel_agent, PROB_FLOOR)) - np.log(
        np.maximum(kernel_human, PROB_FLOOR)
    )
    terms = np.where(valid, llr[np.where(valid, src, 0), np.where(valid, dst, 0)], 0.0)
    return terms.sum(axis=1) / valid.sum(axis=1)


def detector_scores(
    codes: np.ndarray,
    lengths: np.ndarray,
    kernel_human: np.ndarray,
    kernel_agent: np.ndarray,
    f_coef: tuple[float, float] = (0.0, 1.0),
    start: int = 0,
    end: int | None = None,
) -> np.ndarray:
    """Agent probability f = σ(a + b·(Δ_H − Δ_A)) of each chain (see `detector_gaps`);
    `f_coef` = (a, b), (0, 1/T) for the temperature score."""
    gaps = detector_gaps(codes, lengths, kernel_human, kernel_agent, start, end)
    return expit(f_coef[0] + f_coef[1] * gaps)


def state_weights(states: tuple[str, ...]) -> np.ndarray:
    """Demand weight per kernel state (`constants.DEMAND_WEIGHTS`; tokens weigh 0)."""
    unknown = [s for s in states if s not in DEMAND_WEIGHTS and s not in (START_TOKEN, END_TOKEN)]
    if unknown:
        raise ValueError(f"no demand weight for states {unknown}")
    return np.array([DEMAND_WEIGHTS.get(s, 0.0) for s in states], dtype=np.float64)


_FIELD_BITS = 12  # packed per-chain counters: 4 fields x 12 bits < 53 bits (exact in float64)
_FIELD_MASK = (1 << _FIELD_BITS) - 1
MAX_BANK_CHAIN_LEN: int = (1 << _FIELD_BITS) // 8 - 1
"""Longest chain the packed counters support (8 x the doubled top demand weight must fit)."""


@dataclass(frozen=True)
class BankTables:
    """Per-class lookup tables for `build_chain_bank`, built once per kernel pair.

    Attributes:
        sampler: inverse-CDF sampler of the generating kernel.
        llr: (S·S,) log K_A − log K_H per move (source·S + destination).
        packed: (S·S,) per move: 1 transition, 2·w(dst), cart(dst), purchase(dst), 12 bits each.
        kind: (S·S,) 1 if the move lands on add_item_to_cart, 2 on checkout_start, else 0.
        start: index of `<start>`.
        end: index of `<end>`.
    """

    sampler: InverseCdf
    llr: np.ndarray
    packed: np.ndarray
    kind: np.ndarray
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
    is_cart = np.isin(np.arange(n_states), [states.index(e) for e in CART_EVENTS])
    purchase = np.arange(n_states) == states.index("purchase_complete")
    fields = (np.ones(n_states), 2.0 * state_weights(states), is_cart, purchase)
    per_dst = sum(np.asarray(v, dtype=np.int64) << (_FIELD_BITS * i) for i, v in enumerate(fields))
    kind = np.zeros(n_states, dtype=np.int8)
    kind[states.index("add_item_to_cart")] = 1
    kind[states.index("checkout_start")] = 2
    llr = np.log(np.maximum(kernel_agent, PROB_FLOOR)) - np.log(
        np.maximum(kernel_human, PROB_FLOOR)
    )
    return BankTables(
        sampler=sampling_cdf(kernel, start, end),
        llr=llr.ravel(),
        packed=per_dst[dst].astype(np.float64),
        kind=kind[dst],
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
    """Sample `size` chains and compute their statistics without a padded event matrix.

    Each transition of the walk (`iter_transitions`) becomes one record (chain, move); per-chain
    statistics are `np.bincount` sums of per-move table values. For the same generator state the
    chains are exactly those of `sample_chains`, and `f` equals `detector_scores` on them.

    Args:
        tables: the class's `bank_tables`.
        size: number of chains.
        rng: randomness source.
        max_len: maximum events per chain (at most `MAX_BANK_CHAIN_LEN`).
        f_coef: (a, b) of f = σ(a + b·gap), as in `detector_scores`.
    """
    if not 1 <= max_len <= MAX_BANK_CHAIN_LEN:
        raise ValueError(f"max_len must be in [1, {MAX_BANK_CHAIN_LEN}], got {max_len}")
    n_states = tables.sampler.cdf.shape[0]
    chain_parts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    move_parts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    for _, chains, src, dst in iter_transitions(
        tables.sampler, size, rng, max_len, start=tables.start, end=tables.end
    ):
        chain_parts.append(chains)
        move_parts.append(src * n_states + dst)
    # One record per transition, in position order.
    chain, move = np.concatenate(chain_parts), np.concatenate(move_parts)
    packed = np.bincount(chain, weights=tables.packed[move], minlength=size).astype(np.int64)
    n_trans, weight2, n_cart, n_purchase = (
        (packed >> (_FIELD_BITS * i)) & _FIELD_MASK for i in range(4)
    )
    llr_sum = np.bincount(chain, weights=tables.llr[move], minlength=size)
    reaches_cart, checkout_after_add = _cart_flags(chain, tables.kind[move], size)
    return ChainBank(
        f=expit(f_coef[0] + f_coef[1] * llr_sum / np.maximum(n_trans, 1)),
        weight=weight2 / 2.0,
        n_cart=n_cart,
        reaches_cart=reaches_cart,
        buys=(n_purchase > 0) | checkout_after_add,
        lengths=n_trans - 1,
    )


def _cart_flags(chain: np.ndarray, kind: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per chain: (has an add_item_to_cart, has a checkout_start after its first add).

    Records are in position order, so a record's index orders it in time.
    """
    adds = np.flatnonzero(kind == 1)
    first_add = np.full(size, chain.size)
    chains_with_add, first = np.unique(chain[adds], return_index=True)
    first_add[chains_with_add] = adds[first]
    checkouts = np.flatnonzero(kind == 2)[::-1]
    last_checkout = np.full(size, -1)
    chains_with_checkout, last = np.unique(chain[checkouts], return_index=True)
    last_checkout[chains_with_checkout] = checkouts[last]
    return first_add < chain.size, last_checkout > first_add
