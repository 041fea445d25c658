"""`strata-core devices`: the GPUs of this PC, which plugin runs each, and the cards chosen."""

from __future__ import annotations

from .. import log, people
from ..gpu.backends import backend_for
from ..plan import config as run_config
from ..plan.context import this_os
from ..plan.detection import PlanRequest, detect
from ..plan.plan import HOST
from .answers import device_dict, devices_answer, dumps
from .report import devices_text, warn


def run_devices(request: PlanRequest, as_json: bool, verbose: bool) -> int:
    _, config = run_config.find_and_load(request.config, request.env, request.recorder)
    detected = detect(request, config)
    selection, notes = detected.selection, (*detected.found.notes, *detected.selection.notes)
    os_name = request.os or this_os()
    rows = [device_dict(a, selection, os_name, request.env) for a in detected.assignments]
    if as_json:
        backend = (backend_for(selection.vendor) if selection.indices else None) or HOST
        print(dumps(devices_answer(rows, backend, selection, notes, detected.warnings)))
    else:
        warn(detected.warnings)
        for note in notes:
            log.info(note, kind="note")
        people.show(devices_text(rows, selection, verbose, people.width()))
    return 0
