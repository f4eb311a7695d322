"""The evaluation protocol: nominal env at every (α, K), both detectors on common random numbers,
metrics from the env's own step totals, the stress view and the action traces."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from phantom_assets.evaluation import (
    EPISODE_METRICS,
    ROW_KEYS,
    STEP_FIELDS,
    TRACE_COLUMNS,
    EpisodeRunner,
    action_traces,
    episode_metrics,
    evaluate_policy,
    nominal_rows,
    stress_rows,
)
from phantom_assets.market import DETECTOR_MODES, make_env
from phantom_assets.market.response import stress_alphas
from phantom_assets.policies import BatchPolicy, DQNPolicy, torch_threads
from tests.unit.evaluation.conftest import action
from tests.unit.market.adapting import adapting

ALPHAS, KS, SEEDS = (0.0, 0.5, 1.0), (2, 8), (40, 41, 42)


def manual_episode(spec, policy, alpha, k, detector, seed) -> tuple[list[dict], float]:
    """The env's own per-step info and the episode reward, without the protocol."""
    env = make_env(spec, alpha, k, detector=detector)
    obs, _ = env.reset(seed=seed)
    infos, total, done = [], 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(policy.act(obs))
        infos.append(info)
        total += reward
        done = terminated or truncated
    return infos, total


def test_rows_cover_every_alpha_k_detector_and_episode_with_common_seeds(spec):
    rows = evaluate_policy(action(spec, 2, 1, 0), spec, ALPHAS, 3, seed=40, ks=KS)
    assert rows.columns == [*ROW_KEYS, *EPISODE_METRICS]
    assert rows.height == len(ALPHAS) * len(KS) * 2 * 3
    seeds = rows.group_by("alpha", "k", "detector").agg(pl.col("seed").sort())["seed"]
    assert all(s.to_list() == list(SEEDS) for s in seeds)
    assert (rows["steps"] == spec.episode_steps).all()


def test_episode_i_replays_env_reset_with_its_seed_at_the_cells_alpha_and_k(spec):
    policy = action(spec, 1, 2, 1)
    rows = evaluate_policy(policy, spec, [0.5], 2, seed=10, ks=[2], detectors=["permuted"])
    for episode in range(2):
        infos, reward = manual_episode(spec, policy, 0.5, 2, "permuted", 10 + episode)
        row = rows.row(episode, named=True)
        assert row["reward"] == pytest.approx(reward)
        assert row["profit"] == pytest.approx(sum(i["profit"] for i in infos))


def test_the_policy_is_reset_before_every_episode(spec):
    policy = action(spec, 2, 1, 0)
    evaluate_policy(policy, spec, [0.0, 1.0], 3, seed=0, ks=[2], detectors=["fitted"])
    assert policy.resets == 6


def test_coi_harm_and_false_positive_rate_are_ratios_of_the_envs_step_totals(spec):
    policy = action(spec, 3, 2, 2)
    (row,) = evaluate_policy(policy, spec, [0.5], 1, seed=7, ks=[2], detectors=["fitted"]).rows(
        named=True
    )
    infos, _ = manual_episode(spec, policy, 0.5, 2, "fitted", 7)
    total = {key: sum(i[key] for i in infos) for key in infos[0] if np.isscalar(infos[0][key])}
    humans = spec.shoppers_per_step * len(infos) - total["agents"]
    assert row["coi_h"] == pytest.approx(total["human_premium"] / total["human_purchases"])
    assert row["coi_a"] == pytest.approx(total["agent_premium"] / total["agent_purchases"])
    bought = total["human_purchases"] + total["agent_purchases"]
    assert row["coi"] == pytest.approx((total["human_premium"] + total["agent_premium"]) / bought)
    harm = (total["human_overpay"] + total["human_lost_spend"]) / total["human_spend_reference"]
    assert row["human_harm"] == pytest.approx(harm) and row["human_harm"] > 0
    surplus = total["human_surplus"] - total["human_surplus_reference"]
    assert row["human_surplus_change"] == pytest.approx(surplus / total["human_spend_reference"])
    assert row["human_quoted_up"] == pytest.approx(total["human_quoted_up"] / humans)
    assert row["false_positive_rate"] == pytest.approx(total["human_flagged"] / humans)
    assert (row["leak"], row["human_lost"]) == pytest.approx((total["leak"], total["human_lost"]))
    assert row["mean_detector"] == spec.detector_strengths[2]


def test_episode_metrics_are_nan_where_a_ratio_has_no_denominator():
    steps = np.zeros((2, 3, len(STEP_FIELDS)))
    out = episode_metrics(steps, shoppers_per_step=10)
    for name in ("coi_h", "coi_a", "coi", "human_harm"):
        assert np.isnan(out[name]).all(), name
    assert (out["false_positive_rate"] == 0).all() and set(out) == set(EPISODE_METRICS)


def test_a_policy_without_detector_gets_the_same_rows_from_both_detectors(spec):
    """Common random numbers: with δ = 0 no quote reads f, so the permuted-f ablation changes
    nothing but the agent-share estimates the shop observes (its decoy scores have the same
    law)."""
    rows = evaluate_policy(action(spec, 2, 1, 0), spec, ALPHAS, 2, seed=3, ks=KS)
    observed = ("mean_alpha_hat", "mean_shopper_alpha_hat")
    fitted, permuted = (
        rows.filter(detector=d).drop("detector", *observed) for d in ("fitted", "permuted")
    )
    assert fitted.equals(permuted)


def test_with_a_detector_the_two_detectors_differ_only_through_f(spec):
    runner = EpisodeRunner(action(spec, 3, 2, 2), spec)
    fitted, permuted = (runner.run(1.0, 8, d, [5, 6]) for d in ("fitted", "permuted"))
    same = [STEP_FIELDS.index(f) for f in ("agents", "human_spend_reference", "level")]
    assert np.array_equal(fitted[..., same], permuted[..., same])  # the same shoppers
    profit = STEP_FIELDS.index("profit")
    assert not np.array_equal(fitted[..., profit], permuted[..., profit])


def test_an_episode_run_twice_is_taken_from_the_runner_not_rerun(spec):
    policy = action(spec, 2, 1, 0)
    runner = EpisodeRunner(policy, spec)
    first = runner.run(0.5, 2, "fitted", [1, 2])
    again = runner.run(0.5, 2, "fitted", [2, 1])
    assert policy.resets == 2 and np.array_equal(first[::-1], again)


def test_a_nominal_episode_that_ran_at_another_alpha_raises(spec):
    """Regression for pitfall §10.5: an adversary inside the evaluation env."""
    runner = EpisodeRunner(action(spec, 2, 1, 0), spec)
    runner._envs[("fitted", 0.0)] = [make_env(spec, robust=True)]  # an adversary slipped in
    with pytest.raises(RuntimeError, match="adversary"):
        runner.run(0.5, 8, "fitted", [0])


@pytest.mark.parametrize(("alphas", "ks"), [([0.5, 1.2], [2]), ([0.5], [0])])
def test_nominal_rows_reject_an_alpha_or_k_off_the_grid(spec, alphas, ks):
    with pytest.raises(ValueError, match=r"alphas|ks"):
        nominal_rows(EpisodeRunner(action(spec, 2, 1, 0), spec), alphas, ks, [0])


def test_stress_alphas_are_the_band_ends_and_centre_inside_the_unit_interval():
    assert stress_alphas(0.1, 0.2).tolist() == pytest.approx([0.1, 0.3])
    assert stress_alphas(0.5, 0.2).tolist() == [0.3, 0.5, 0.7]  # exact: lands on grid α
    assert stress_alphas(1.0, 0.25).tolist() == [0.75, 1.0]
    assert stress_alphas(0.5, 0.0).tolist() == [0.5]


def test_stress_evaluates_every_band_alpha_on_both_splits_like_the_nominal_protocol(spec):
    # No policy's own worst alpha: every band alpha on both splits, so the gate can pair two
    # policies at the same alpha and take the worst case of their difference (audit.pairs).
    policy = action(spec, 4, 2, 1)
    stress = stress_rows(EpisodeRunner(policy, spec), 0.5, 0.25, 8, [3, 4], [50, 51, 52])
    band = [0.25, 0.5, 0.75]
    for split, seeds in (("selection", [3, 4]), ("test", [50, 51, 52])):
        rows = stress.filter(split=split)
        assert sorted(set(rows["alpha"])) == band and sorted(set(rows["seed"])) == seeds
        assert set(rows["detector"]) == {"fitted", "permuted"}
        nominal = nominal_rows(EpisodeRunner(policy, spec), band, [8], seeds)
        assert rows.drop("split", "theta", "alpha0", "radius").equals(nominal)
    assert set(stress["alpha0"]) == {0.5} and set(stress["radius"]) == {0.25}
    assert set(stress["theta"]) == {0.0}  # the agents as logged: no evasion band
    assert "worst_alpha" not in stress.columns


def test_stress_adds_agents_that_adapt_on_the_same_shoppers_with_the_agents_other_scores(spec):
    # θ = 1: every agent session scores like a human session of its engagement. The same
    # shoppers arrive (common random numbers); a policy that quotes up on the detector earns
    # otherwise, one that ignores it (δ = 0) earns exactly the same.
    market = adapting(spec, (0.0, 1.0), band=1.0)
    assert market.evasion_band_thetas == (0.0, 1.0)
    seeds = ([3, 4], [50, 51])
    rows = {
        strength: stress_rows(
            EpisodeRunner(action(market, 4, 2, strength), market),
            0.5,
            0.25,
            8,
            *seeds,
            market.evasion_band_thetas,
        ).filter(detector="fitted")
        for strength in (0, 2)
    }
    logged, adapted = (rows[2].filter(theta=t).drop("theta") for t in (0.0, 1.0))
    assert logged["agent_purchases"].sum() > 0
    # Fewer agents flagged, so they pay less premium; the humans' quotes do not move.
    assert logged["coi_a"].mean() > adapted["coi_a"].mean()
    assert logged["coi_h"].equals(adapted["coi_h"])
    assert not np.array_equal(logged["profit"], adapted["profit"])
    nominal = nominal_rows(
        EpisodeRunner(action(spec, 4, 2, 2), spec), [0.25, 0.5, 0.75], [8], seeds[0]
    )
    assert (
        logged.filter(split="selection")
        .drop("split", "alpha0", "radius")
        .equals(nominal.filter(detector="fitted"))
    )
    blind = {t: rows[0].filter(theta=t)["profit"] for t in (0.0, 1.0)}
    assert blind[0.0].equals(blind[1.0])
    with pytest.raises(ValueError, match="not swept"):
        stress_rows(EpisodeRunner(action(spec, 4, 2, 2), spec), 0.5, 0.25, 8, *seeds, (0.0, 0.5))


def test_stress_refuses_overlapping_selection_and_test_seeds(spec):
    with pytest.raises(ValueError, match="overlap"):
        stress_rows(EpisodeRunner(action(spec, 2, 1, 0), spec), 0.5, 0.25, 8, [3, 4], [4, 5])


def test_action_traces_record_every_episodes_chosen_action_and_the_observed_shares(spec):
    policy = action(spec, 0, 2, 1)
    runner = EpisodeRunner(policy, spec)
    traces = action_traces(runner, [0.0, 1.0], [2, 8], seeds=[9, 10])
    assert traces.columns == ["alpha", "k", "seed", "step", *TRACE_COLUMNS]
    assert traces.height == 4 * 2 * spec.episode_steps
    level, markup, delta = spec.action_values(policy.action)
    assert set(traces["action"]) == {policy.action} and set(traces["level"]) == {level}
    assert set(traces["markup"]) == {markup} and set(traces["detector_strength"]) == {delta}
    for hat in ("alpha_hat", "shopper_alpha_hat"):
        means = traces.group_by("alpha").agg(pl.col(hat).mean()).sort("alpha")[hat]
        assert means[0] < 0.3 < 0.7 < means[1], hat  # each tracks the agent share
    episode = traces.filter(alpha=1.0, k=8, seed=10).sort("step")
    steps = runner.run(1.0, 8, "fitted", [10])[0]
    assert episode["shopper_alpha_hat"].to_numpy() == pytest.approx(
        steps[:, STEP_FIELDS.index("shopper_alpha_hat")]
    )


class OneAtATime:
    """A policy seen without `act_batch`: the runner plays its episodes one at a time."""

    def __init__(self, policy) -> None:
        self.policy, self.tier = policy, policy.tier

    def act(self, obs: np.ndarray) -> int:
        return self.policy.act(obs)

    def reset(self) -> None:
        self.policy.reset()

    def save(self, path):
        return self.policy.save(path)


class CountedBatches(OneAtATime):
    """A batch policy that counts its `act_batch` calls."""

    batches = 0

    def act_batch(self, obs: np.ndarray) -> np.ndarray:
        self.batches += 1
        return self.policy.act_batch(obs)


def untrained_dqn(spec) -> DQNPolicy:
    """A DQN with a random network whose weights are scaled up, so that its greedy action
    varies with the observation (the initial network's barely does)."""
    from stable_baselines3 import DQN

    model = DQN("MlpPolicy", make_env(spec), seed=2, policy_kwargs={"net_arch": [16]})
    for weights in model.policy.q_net.parameters():
        weights.data.mul_(30.0)
    return DQNPolicy(model)


def test_a_batch_policy_steps_a_cells_episodes_together_with_the_rows_of_one_at_a_time(spec):
    network = untrained_dqn(spec)
    batched, alone = CountedBatches(network), OneAtATime(network)
    assert isinstance(batched, BatchPolicy) and not isinstance(alone, BatchPolicy)
    seeds = list(range(50, 56))
    with torch_threads(1):
        runners = (EpisodeRunner(batched, spec), EpisodeRunner(alone, spec))
        rows = [
            [runner.run(a, k, d, seeds) for a in ALPHAS for k in KS for d in DETECTOR_MODES]
            for runner in runners
        ]
    cells = len(ALPHAS) * len(KS) * len(DETECTOR_MODES)
    assert batched.batches == cells * spec.episode_steps  # one network call per step for six
    actions = np.concatenate([cell[..., STEP_FIELDS.index("action")].ravel() for cell in rows[0]])
    assert np.unique(actions).size > 2  # the comparison is not between constant policies
    for lockstep, one_at_a_time in zip(*rows, strict=True):
        np.testing.assert_array_equal(lockstep, one_at_a_time)


def test_a_lockstep_batch_mixed_with_cached_episodes_returns_them_in_the_seeds_order(spec):
    runner = EpisodeRunner(CountedBatches(untrained_dqn(spec)), spec)
    with torch_threads(1):
        first = runner.run(0.5, 2, "fitted", [41, 43])
        mixed = runner.run(0.5, 2, "fitted", [40, 41, 42, 43])
        alone = EpisodeRunner(OneAtATime(runner.policy.policy), spec).run(
            0.5, 2, "fitted", [40, 41, 42, 43]
        )
    np.testing.assert_array_equal(mixed[[1, 3]], first)
    np.testing.assert_array_equal(mixed, alone)
