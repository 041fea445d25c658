"""The commands of `strata-core`, one module each (cli/NAME.py): parse, call the pipeline,
render. cli/main.py holds the table of commands and runs one; the options several commands
share are in cli/options.py, the grammar of a command line in cli/usage.py."""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on a command's path
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping
    from typing import Protocol

    from ..answer_cache import Recorder
    from . import devices, env, plan, plugins, run, table, tune

    class Command(Protocol):
        """A command's module: its options, and its run (the exit status). It may also have
        ``ignored_options(args)``: the options given that would be ignored in silence."""

        def add_arguments(self, parser: argparse.ArgumentParser) -> None:
            """Add the command's options to its parser (-v, -q and --log-format are there)."""

        def run(
            self,
            args: argparse.Namespace,
            env: Mapping[str, str],
            recorder: Recorder | None = None,
        ) -> int:
            """Run the command line ``args`` in ``env``; ``recorder`` reads the inputs of a
            cacheable answer. The exit status; StrataError for a user's error."""

    #: every command that runs holds to Command (help runs as --help: cli/help.py)
    RUNNING: tuple[Command, ...] = (devices, env, plan, plugins, run, table, tune)
