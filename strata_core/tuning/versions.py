"""Library versions as the tables name them, given for planning or probed at run time."""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from .. import library_search
from ..answer_cache import Recorder
from ..errors import StrataError
from .libraries import LIBRARIES

#: what the probe's child may see: each library's variable and the loader's search roots
LIBRARY_VARIABLES = (
    *(library.variable for library in LIBRARIES.values()),
    "ROCM_PATH",
    "LD_LIBRARY_PATH",
)


def hipblaslt_number(text: str) -> str:
    """hipBLASLt encodes 1.4.1 as 100401 (major * 100000 + minor * 100 + patch)."""
    text = text.strip()
    if re.fullmatch(r"\d{5,6}", text):
        return text
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", text)
    if not match or int(match.group(2)) > 999 or int(match.group(3)) > 99:
        raise StrataError(f"--hipblaslt {text}: expected a version such as 1.4.1 or 100401")
    major, minor, patch = (int(g) for g in match.groups())
    return str(major * 100000 + minor * 100 + patch)


def rocblas_version(text: str) -> str:
    """The full rocBLAS version string, tweak hash included: 5.6.0.8d1ae90e."""
    text = text.strip()
    if not re.fullmatch(r"\d+\.\d+\.\d+\.[0-9a-f]*", text):
        raise StrataError(
            f"--rocblas {text}: expected the full version with its tweak hash, "
            "such as 5.6.0.8d1ae90e"
        )
    return text


@attrs.frozen
class LibraryVersion:
    version: str | None
    how: str


def probe(
    env: Mapping[str, str], timeout_s: float, recorder: Recorder | None = None
) -> dict[str, LibraryVersion]:
    """Ask the installed hipBLASLt, rocBLAS and cuBLASLt, in a child process."""
    from ..child import ChildFailed, child_environment, run_json_module

    recorder = recorder or Recorder()
    for named in LIBRARIES.values():
        library_search.record(env, named.variable, recorder)
    try:
        answer = run_json_module(
            "strata_core.tuning.library_probe",
            child_environment(env, lambda k: k in LIBRARY_VARIABLES),
            timeout_s,
            "library version probe",
            recorder,
        )
    except ChildFailed as failed:
        return dict.fromkeys(LIBRARIES, LibraryVersion(None, str(failed)))
    found = {}
    for library, named in LIBRARIES.items():
        info = answer.get(library)
        if info is None:
            found[library] = LibraryVersion(None, f"no {named.kind.library} library found")
        elif "error" in info:
            where = f"{info['library']}: " if "library" in info else ""
            found[library] = LibraryVersion(None, f"{where}{info['error']}")
        else:
            found[library] = LibraryVersion(info["version"], f"probed from {info['library']}")
    return found
