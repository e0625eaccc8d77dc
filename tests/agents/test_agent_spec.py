"""Agent specs with options, ``NAME[key=value,...]``: parsing, building, errors, and the CLI list."""

from __future__ import annotations

import gymnasium as gym
import pytest

import aco_env  # noqa: F401  (registers the env ids)
import scenarios
from aco_env.registration import FLEET5_ID
from agents import AgentSpecError, check_agent_name, is_hindsight_agent, make_agent
from agents.lookahead import LookaheadAgent
from agents.spec import agent_base_name, parse_agent_spec, split_agent_specs
from training import checks
from training.errors import UsageError


def test_parse_agent_spec__reads_numbers_words_and_text() -> None:
    """ints, floats, none/true/false in any case, other text as is; plain names and sb3 specs have no options."""
    name, options = parse_agent_spec("lookahead[samples=2, rollout_window_s=90.5, candidates=None, x=True, y=abc]")
    assert name == "lookahead"
    assert options == {"samples": 2, "rollout_window_s": 90.5, "candidates": None, "x": True, "y": "abc"}
    assert parse_agent_spec("first-fit") == ("first-fit", {})
    assert parse_agent_spec("sb3:ppo:runs/a[1]/model.zip") == ("sb3:ppo:runs/a[1]/model.zip", {})
    assert parse_agent_spec("aco[]") == ("aco", {})


@pytest.mark.parametrize("bad", ["lookahead[samples=2", "lookahead]", "[samples=2]", "lookahead[samples]",
                                 "lookahead[=2]", "lookahead[samples=2,samples=3]", "lookahead[a=[1]]",
                                 "lookahead[samples=2]x"])
def test_parse_agent_spec__malformed_specs_are_refused_by_name(bad: str) -> None:
    with pytest.raises(AgentSpecError, match="agent spec"):
        parse_agent_spec(bad)


def test_split_agent_specs__commas_inside_brackets_stay() -> None:
    assert split_agent_specs(" aco,lookahead[samples=2,candidates=4], ,first-fit ") == [
        "aco", "lookahead[samples=2,candidates=4]", "first-fit"]


def test_make_agent__builds_with_the_spec_options_and_refuses_unknown_ones() -> None:
    """The spec's options reach the factory; an unknown option or name is an AgentSpecError naming it."""
    env = gym.make(FLEET5_ID)
    agent = make_agent("lookahead[samples=2,rollout_window_s=600,candidates=3]", env)
    assert isinstance(agent, LookaheadAgent)
    assert (agent.samples, agent.rollout_window_s, agent.candidates) == (2, 600, 3)
    assert make_agent("lookahead[samples=2]", env, samples=3).samples == 3  # keyword options win
    with pytest.raises(AgentSpecError, match=r"no such option.*windw"):
        make_agent("lookahead[windw=600]", env)
    with pytest.raises(AgentSpecError, match="unknown agent 'lookahed'"):
        check_agent_name("lookahed[samples=2]")
    with pytest.raises(ValueError, match="candidates"):
        make_agent("lookahead[candidates=0]", env)


def test_hindsight_and_base_names__options_aside() -> None:
    assert is_hindsight_agent("lookahead-clairvoyant[rollout_window_s=60]")
    assert not is_hindsight_agent("lookahead[samples=2]") and not is_hindsight_agent("sb3:ppo:x.zip")
    assert agent_base_name("oracle[node_limit=10]") == "oracle"


def test_agent_list__takes_specs_with_options_and_refuses_bad_ones() -> None:
    assert checks.agent_list("aco,lookahead[samples=2,candidates=4]") == ["aco", "lookahead[samples=2,candidates=4]"]
    with pytest.raises(UsageError, match="--agents: agent spec"):
        checks.agent_list("lookahead[samples=2")


def test_agent_options__a_bad_option_ends_the_command_before_any_episode() -> None:
    """Specs with options are built once on the scenario's env; plain names and good options pass."""
    scenario = scenarios.load("fleet5-synthetic")
    checks.agent_options(["aco", "lookahead[samples=1,candidates=2]"], scenario)
    with pytest.raises(UsageError, match=r"--agents: agent 'lookahead\[windw=60\]': no such option.*windw"):
        checks.agent_options(["lookahead[windw=60]"], scenario)
    with pytest.raises(UsageError, match="candidates must be"):
        checks.agent_options(["lookahead[candidates=0]"], scenario)
