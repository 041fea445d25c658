"""`strata-core devices`: the GPUs of this PC, which plugin runs each, and the cards chosen."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from .. import log, people
from ..answer_cache import Recorder
from ..gpu.backends import backend_for
from ..plan import config as run_config
from ..plan.context import this_os
from ..plan.detection import detect
from ..plan.plan import HOST
from .answers import device_dict, devices_answer, dumps
from .options import scan_options
from .report import devices_text, warn
from .request import plan_request


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--json, the sysfs root, the run config and the cards of this PC."""
    scan_options(
        parser,
        "run config whose gpu is used (default: $STRATA_CONFIG, else ./strata.toml if present)",
    )


def run(args: argparse.Namespace, env: Mapping[str, str], recorder: Recorder | None = None) -> int:
    """List the GPUs of this PC, the plugin that runs each, and the cards a run uses."""
    request = plan_request(args, env, recorder)
    _, config = run_config.find_and_load(request.config, request.env, request.recorder)
    detected = detect(request, config)
    selection, notes = detected.selection, (*detected.found.notes, *detected.selection.notes)
    os_name = request.os or this_os()
    rows = [device_dict(a, selection, os_name, request.env) for a in detected.assignments]
    if args.json:
        backend = (backend_for(selection.vendor) if selection.indices else None) or HOST
        print(dumps(devices_answer(rows, backend, selection, notes, detected.warnings)))
    else:
        warn(detected.warnings)
        for note in notes:
            log.info(note, kind="note")
        people.show(devices_text(rows, selection, args.verbose, people.width()))
    return 0
