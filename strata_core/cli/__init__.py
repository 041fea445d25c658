"""The commands of `strata-core`, one module each: parse, call the pipeline, render."""
