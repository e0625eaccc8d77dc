"""The Markdown page of ``reproduction.json``: the header (machine, seeds, data, oracle), the summary, the tiers.

Each tier's section comes from :mod:`training.reproduction.report_tiers` and the summary table from
:mod:`training.reproduction.report_summary`; the shared formatting is
:mod:`training.reproduction.report_format`.
"""

from __future__ import annotations

from typing import Any

from agents.oracle.milp.limits import SolveLimits
from training.reproduction.report_format import tier_command
from training.reproduction.report_summary import summary_table
from training.reproduction.report_tiers import RENDERERS

PAGE_TITLE = "Reproducing the reference results"
"""The page's title (a new page starts with it; the text around the generated block is hand-written)."""


def render_blocks(document: dict[str, Any]) -> dict[str, str]:
    """The generated block of ``docs/reproduction.md``: ``{"reproduction": Markdown}``.

    It starts with the line naming the command, commit and date, then the settings, the summary
    and every tier's section. :func:`training.outputs.write_generated` puts it into the page and
    leaves the page's hand-written text as it is.
    """
    settings = document["settings"]
    machine = document["machine"]
    commit = (document.get("commit") or "")[:10] or "not recorded"
    traces = settings.get("traces_present", settings.get("traces_dir") is not None)
    lines = [
        f"Command: `{document['command']}` (commit {commit}, {document['date']}; Python {machine['python']}, "
        f"{machine['processor']}, {machine['cpus']} CPUs shared with other work, so latencies are indicative).",
        "",
        f"Seeds per tier: {settings['seeds']}. Oracle: {_oracle_line(settings)}. "
        f"Real traces: {'present (ACO_ENV_TRACES)' if traces else 'not present (ACO_ENV_TRACES unset)'}.",
        "",
        "## Summary",
        "",
        *summary_table(document["tiers"]),
        "",
    ]
    for name, result in document["tiers"].items():
        lines += RENDERERS[name](result, tier_command(name, settings["seeds"], settings["oracle_limits"]))
    return {"reproduction": "\n".join(lines).rstrip() + "\n"}


def _oracle_line(settings: dict[str, Any]) -> str:
    if settings["oracle_limits"] is None:
        return "not run (--no-oracle)"
    if not settings["oracle_available"]:
        return "not available (agents.oracle does not import), columns n/a"
    limits = settings["oracle_limits"]
    return f"the registered `oracle` agent, {SolveLimits(**limits).describe()}"
