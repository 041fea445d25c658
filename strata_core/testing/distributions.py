"""Fake installed distributions: a dist-info folder with entry points, plus module files.

Put the folder on ``sys.path`` (pytest's ``monkeypatch.syspath_prepend``) and
``importlib.metadata`` finds the distribution as if pip had installed it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

from ..api.manager import ENTRY_POINT_GROUP


def write_distribution(
    site: Path, name: str, version: str, entry_points: Mapping[str, str], modules: Mapping[str, str]
) -> Path:
    """Write distribution ``name`` into ``site``: ``entry_points`` maps plugin names to
    ``module:attribute`` in the group strata.arch; ``modules`` maps file names to source."""
    site.mkdir(parents=True, exist_ok=True)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = "".join(f"{plugin} = {target}\n" for plugin, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}")
    for filename, source in modules.items():
        (site / filename).write_text(textwrap.dedent(source))
    return site
