"""Agent specs: a registered name with options, ``NAME[key=value,...]``, as the command line writes them.

``lookahead[rollout_window_s=600,candidates=8]`` builds the ``lookahead`` agent with those two
keyword options; the whole spec is the agent's label in leaderboards, so variants of one agent
sit side by side (``--agents "lookahead,lookahead[candidates=4]"``). Values are read as
``int``, then ``float``, then ``none`` / ``true`` / ``false`` (any case), else kept as text.
``sb3:PATH`` specs take no options (a path may hold brackets); lists of specs are split at the
commas outside brackets (:func:`split_agent_specs`).
"""

from __future__ import annotations

from typing import Any

from agents.base import AgentSpecError

_WORDS = {"none": None, "true": True, "false": False}


def parse_agent_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``(name, options)`` of ``spec``; an ``sb3:`` spec or a plain name has no options.

    >>> parse_agent_spec("lookahead[rollout_window_s=600.5,candidates=8]")
    ('lookahead', {'rollout_window_s': 600.5, 'candidates': 8})

    Raises:
        AgentSpecError: Unbalanced brackets, an option without ``=``, an empty or repeated key.
    """
    if spec.startswith("sb3:") or ("[" not in spec and "]" not in spec):
        return spec, {}
    name, bracket, rest = spec.partition("[")
    if not bracket or not rest.endswith("]") or "[" in rest or "]" in rest[:-1] or not name:
        raise AgentSpecError(f"agent spec {spec!r}: write NAME[key=value,...] with one pair of brackets at the end")
    options: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in rest[:-1].split(","))):
        key, equals, value = (text.strip() for text in item.partition("="))
        if not equals or not key:
            raise AgentSpecError(f"agent spec {spec!r}: option {item!r} is not key=value")
        if key in options:
            raise AgentSpecError(f"agent spec {spec!r}: option {key!r} given twice")
        options[key] = _value(value)
    return name, options


def agent_base_name(spec: str) -> str:
    """The registered name ``spec`` refers to (``spec`` itself for ``sb3:`` specs and plain names)."""
    return spec if spec.startswith("sb3:") else spec.partition("[")[0]


def split_agent_specs(text: str) -> list[str]:
    """The comma-separated specs of ``text``, split outside brackets, stripped, empty ones dropped.

    >>> split_agent_specs("aco, lookahead[samples=2,candidates=4],first-fit")
    ['aco', 'lookahead[samples=2,candidates=4]', 'first-fit']
    """
    specs, depth, start = [], 0, 0
    for k, char in enumerate(text):
        depth += (char == "[") - (char == "]")
        if char == "," and depth == 0:
            specs.append(text[start:k])
            start = k + 1
    specs.append(text[start:])
    return [spec.strip() for spec in specs if spec.strip()]


def _value(text: str) -> Any:
    """``text`` as an int, a float, ``None``/``True``/``False``, or itself."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return _WORDS.get(text.lower(), text)
