"""Marketing names from libdrm's table of AMD GPUs (``amdgpu.ids``, installed as
/usr/share/libdrm/amdgpu.ids), the names rocminfo and amd-smi show.

Format facts, as libdrm's amdgpu_asic_id.c reads the file: ``#`` starts a comment line; the
first other line is the table's version (``1.0.0``); every later line is
``DEVICE_ID,<tab>REVISION_ID,<tab>PRODUCT_NAME``, both ids in hex (``73EF,\tC1,\tAMD Radeon
RX 6650 XT``); where two lines name one (device, revision), libdrm takes the first. The name
shown here drops a leading ``AMD `` (``Radeon RX 6650 XT``, ``Instinct MI300X``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from .. import log
from ..answer_cache import Recorder
from ..bounded import AMDGPU_IDS

#: ``DEVICE, REVISION, NAME``: ids of 1-4 and 1-2 hex digits, blanks around each
_ROW = re.compile(r"\s*([0-9A-Fa-f]{1,4})\s*,\s*([0-9A-Fa-f]{1,2})\s*,\s*(\S.*?)\s*")
_VERSION = re.compile(r"\s*\d+(\.\d+)*\s*")


class MarketingNames:
    """The names of one ``amdgpu.ids``, by PCI device id and revision. ``skipped`` counts the
    lines that were neither a comment, a blank, the version nor a row."""

    __slots__ = ("_exact", "_by_device", "skipped")

    def __init__(self, rows: Iterable[tuple[int, int, str]] = (), skipped: int = 0) -> None:
        exact: dict[tuple[int, int], str] = {}
        by_device: dict[int, set[str]] = {}
        for device_id, revision, name in rows:
            shown = shown_name(name)
            exact.setdefault((device_id, revision), shown)  # the first line wins, as in libdrm
            by_device.setdefault(device_id, set()).add(shown)
        self._exact: Mapping[tuple[int, int], str] = exact
        self._by_device: Mapping[int, frozenset[str]] = {
            device: frozenset(names) for device, names in by_device.items()
        }
        self.skipped = skipped

    def __len__(self) -> int:
        return len(self._exact)

    def name_of(self, device_id: int | None, revision: int | None) -> str | None:
        """The name of (device_id, revision); with the revision unknown or not listed, the
        name every row of that device id gives, where they all give one; else None."""
        if device_id is None:
            return None
        if revision is not None and (device_id, revision) in self._exact:
            return self._exact[device_id, revision]
        names = self._by_device.get(device_id, frozenset())
        return next(iter(names)) if len(names) == 1 else None


#: no table: every name unknown
NO_NAMES = MarketingNames()


def shown_name(name: str) -> str:
    """``AMD Radeon RX 6650 XT`` -> ``Radeon RX 6650 XT``; other names as they are."""
    return name.removeprefix("AMD ").strip() or name


def parse_names(text: str) -> MarketingNames:
    """The rows of an ``amdgpu.ids`` text; comments, blanks and the version line are passed
    over, any other line that is not a row is skipped and counted."""
    rows: list[tuple[int, int, str]] = []
    skipped = 0
    version_seen = False
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        row = _ROW.fullmatch(line)
        if row is not None:
            rows.append((int(row[1], 16), int(row[2], 16), row[3]))
        elif not version_seen and not rows and _VERSION.fullmatch(line):
            version_seen = True
        else:
            skipped += 1
    return MarketingNames(rows, skipped)


def read_names(path: Path | None, recorder: Recorder) -> MarketingNames:
    """The names of the table at ``path``, read through ``recorder`` (an answer of the cache
    depends on it). None or a missing file: no names, nothing said. A file that cannot be
    read, is past its bound or is not UTF-8: no names and one debug line that says why."""
    if path is None:
        return NO_NAMES
    try:
        text = recorder.read_text(path, AMDGPU_IDS)
    except FileNotFoundError:
        return NO_NAMES
    except OSError as exc:
        _say(f"{path}: cannot read ({exc.strerror or exc}); no marketing names from it")
        return NO_NAMES
    except UnicodeDecodeError as exc:
        _say(f"{path}: not UTF-8 text (byte {exc.start}); no marketing names from it")
        return NO_NAMES
    names = parse_names(text)
    if names.skipped:
        _say(f"{path}: {names.skipped} lines are not 'DEVICE, REVISION, NAME'; skipped")
    return names


def _say(message: str) -> None:
    log.debug(message, kind="detection")
