"""Registers the ``strata-kernels`` build hook with hatch (entry point group ``hatch``)."""

from hatchling.plugin import hookimpl

from .build_hook import HipCodeObjects


@hookimpl
def hatch_register_build_hook() -> type[HipCodeObjects]:
    return HipCodeObjects
