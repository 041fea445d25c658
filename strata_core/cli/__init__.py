"""The commands of `strata-core`, one module each (cli/NAME.py): parse, call the pipeline,
render. Each is a record of strata_core.commands; cli/main.py builds the parser from them and
runs one; the options several commands share are in cli/options.py, the grammar of a command
line in cli/usage.py."""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on a command's path
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping
    from typing import Protocol

    from ..answer_cache import Recorder
    from . import devices, env, plan, plugins, run, table, tune

    class CommandModule(Protocol):
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

    #: the type checker's proof that the module of every command record that runs holds to
    #: CommandModule (help runs as --help: cli/help.py); test_cli checks it names them all
    RUNNING: tuple[CommandModule, ...] = (devices, env, plan, plugins, run, table, tune)
