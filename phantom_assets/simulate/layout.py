"""Subjects, experiments and sessions of one store (who shops, for what, in how many sessions).

An *experiment* is one subject (human or agent) doing one task. A human uses one session, or two
(a first look, then a return visit). An LLM agent splits its reconnaissance over several clean
sessions (3-6, each examining a different slice of the catalog) and buys from a fresh short
session -- the premise of the product. At separability `s`, an agent subject takes that agent
structure with probability `s`, else the human one; at `s = 0` agents are laid out like humans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phantom_assets.simulate.profiles import HUMAN, BehaviourProfile, blend

__all__ = ["ROLES", "Layout", "lay_out"]

# Session roles. SINGLE: the only session of a human-like experiment; FIRST/SECOND: a two-visit
# human-like experiment; RECON: an agent reconnaissance session; BUY: the agent's fresh buy session.
ROLES: tuple[str, ...] = ("single", "first", "second", "recon", "buy")
SINGLE, FIRST, SECOND, RECON, BUY = range(5)
P_TWO_VISITS = 0.3
RECON_SESSIONS = (3, 6)  # inclusive range of reconnaissance sessions of an agent-like experiment
RECON_ITEMS = (2, 4)  # inclusive range of items examined per reconnaissance session


@dataclass(frozen=True)
class Layout:
    """Experiments and sessions of one store as parallel arrays.

    Attributes:
        xp_is_agent: (E,) whether the subject is an LLM agent (the ground-truth label).
        xp_task: (E,) task index into `tasks_for(store)`.
        session_xp: (S,) experiment index of each session, experiments contiguous and in order.
        session_role: (S,) index into `ROLES`.
        session_rank: (S,) position of the session within its experiment.
        session_is_agent: (S,) label of the session (that of its experiment).
        human: The human profile.
        agent: The agent profile at this separability.
        separability: The separability the layout was drawn at.
    """

    xp_is_agent: np.ndarray
    xp_task: np.ndarray
    session_xp: np.ndarray
    session_role: np.ndarray
    session_rank: np.ndarray
    session_is_agent: np.ndarray
    human: BehaviourProfile
    agent: BehaviourProfile
    separability: float

    @property
    def n_sessions(self) -> int:
        """Number of sessions."""
        return int(self.session_xp.size)

    def param(self, name: str) -> np.ndarray:
        """Per-session value of profile parameter `name` (agent sessions get the blended value)."""
        return np.where(
            self.session_is_agent, getattr(self.agent, name), getattr(self.human, name)
        ).astype(np.float64)


def lay_out(
    n_humans: int,
    n_agents: int,
    task_weights: np.ndarray,
    separability: float,
    rng: np.random.Generator,
) -> Layout:
    """Draw the experiments and sessions of one store.

    Args:
        n_humans: Human subjects (one experiment each).
        n_agents: Agent subjects (one experiment each).
        task_weights: Relative popularity of the store's tasks (shared by humans and agents).
        separability: Behavioural gap in [0, 1].
        rng: Source of randomness.

    Returns:
        The layout; humans first, then agents.

    Raises:
        ValueError: for negative counts or an empty task list.
    """
    if n_humans < 0 or n_agents < 0:
        raise ValueError(f"subject counts must be >= 0, got {n_humans=} {n_agents=}")
    if task_weights.size == 0:
        raise ValueError("task_weights is empty")
    n_xp = n_humans + n_agents
    xp_is_agent = np.arange(n_xp) >= n_humans
    xp_task = rng.choice(task_weights.size, size=n_xp, p=task_weights / task_weights.sum())
    agentlike = xp_is_agent & (rng.random(n_xp) < separability)
    two_visits = rng.random(n_xp) < P_TWO_VISITS
    n_recon = rng.integers(RECON_SESSIONS[0], RECON_SESSIONS[1] + 1, size=n_xp)
    n_sessions = np.where(agentlike, n_recon + 1, np.where(two_visits, 2, 1))

    session_xp = np.repeat(np.arange(n_xp), n_sessions)
    first_of_xp = np.cumsum(n_sessions) - n_sessions
    rank = np.arange(session_xp.size) - first_of_xp[session_xp]
    last = rank == n_sessions[session_xp] - 1
    role = np.where(
        agentlike[session_xp],
        np.where(last, BUY, RECON),
        np.where(n_sessions[session_xp] == 1, SINGLE, np.where(rank == 0, FIRST, SECOND)),
    )
    return Layout(
        xp_is_agent=xp_is_agent,
        xp_task=xp_task,
        session_xp=session_xp,
        session_role=role.astype(np.int8),
        session_rank=rank,
        session_is_agent=xp_is_agent[session_xp],
        human=HUMAN,
        agent=blend(separability),
        separability=separability,
    )
