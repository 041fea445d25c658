"""The detection context the core gives every detector: the plugin API's DetectionContext
with the answer cache's recorder, through which the core's own detectors read the files and
probes an answer depends on. A plugin's detector sees a DetectionContext; what it reads is
not recorded (strata_core.plan.devices says so to the answer cache)."""

from __future__ import annotations

import attrs

from ..answer_cache import Recorder
from ..api.records import DetectionContext


@attrs.frozen
class RecordingContext(DetectionContext):
    recorder: Recorder = attrs.field(factory=Recorder, eq=False, repr=False)


def recorder_of(context: DetectionContext) -> Recorder:
    """The recorder the core gave with ``context``; for a bare DetectionContext (a plugin's
    own call, a test's), one that records for no answer."""
    return context.recorder if isinstance(context, RecordingContext) else Recorder()
