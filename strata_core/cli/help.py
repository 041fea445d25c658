"""`strata-core help [COMMAND]`: the help of strata-core, or of one command. It runs by
becoming `[COMMAND] --help` before the command line is parsed, so that argparse prints the
help that --help prints."""

from __future__ import annotations

import argparse

from .usage import command_word


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command to explain."""
    parser.add_argument("topic", nargs="?", metavar="COMMAND", help="the command to explain")


def as_help_option(argv: list[str]) -> list[str]:
    """`help` is `--help`, and `help COMMAND` is `COMMAND --help`."""
    if command_word(argv) != "help":
        return argv
    at = argv.index("help")
    return [*argv[:at], *argv[at + 1 :], "--help"]
