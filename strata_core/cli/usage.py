"""The command line's grammar around argparse: a usage error as one line (UsageError), the
parser that says it with the closest choice or option (did-you-mean, as git does), and the
reading of a command line before it is parsed (its command word, a misspelt command or
option)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on a command's path
if TYPE_CHECKING:
    from typing import Any, NoReturn

PROG = "strata-core"


class UsageError(Exception):
    """A command line that cannot be parsed; `main` says it in one line, in the chosen log
    format, and with --json as a JSON answer too."""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written; an option's help wrapped at spaces only, so that a name such
    as deep-context-k2048 stays whole."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class Parser(argparse.ArgumentParser):
    """argparse with a usage error as a UsageError (a misspelt choice with the closest one),
    whole option names only (an abbreviation would change its meaning when an option is
    added), every fixed set of values taken in any case (--kv INT8 is int8), and help text
    kept as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        if isinstance(action.choices, list | tuple) and arg_string not in action.choices:
            folded = {str(c).casefold(): c for c in action.choices}
            arg_string = str(folded.get(arg_string.casefold(), arg_string))
        return super()._get_value(action, arg_string)

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix(PROG).strip()
        message += closest_choice(message)
        raise UsageError(f"{command}: {message}" if command else message)


def closest(word: str, known: Sequence[str]) -> str:
    """The did-you-mean ("; did you mean KNOWN?") of a misspelt word, else nothing."""
    import difflib

    folded = {k.casefold(): k for k in known}
    close = difflib.get_close_matches(word.casefold(), list(folded), n=1)
    return f"; did you mean {folded[close[0]]}?" if close else ""


def closest_choice(message: str) -> str:
    """The did-you-mean of argparse's "invalid choice: 'chek' (choose from 'check')"."""
    import re

    found = re.search(r"invalid choice: '(.*)' \(choose from (.*)\)$", message)
    if found is None:
        return ""
    return closest(found[1], re.findall(r"'([^']*)'", found[2]))


def command_word(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is no option nor its value."""
    words = iter(argv)
    for arg in words:
        if arg == "--log-format":
            next(words, None)
        elif not arg.startswith("-"):
            return arg
    return None


def known_command(argv: Sequence[str], commands: Sequence[str]) -> None:
    """A misspelt command is refused with the closest one (plgins: did you mean plugins?)."""
    word = command_word(argv)
    if word is not None and word not in commands:
        hint = closest(word, commands)
        raise UsageError(f"{word!r} is not a command ({', '.join(commands)}){hint}")


def no_command(argv: Sequence[str]) -> str:
    """What a command line of options alone lacks: a command, or an option it misspelt."""
    known = ("-v", "--verbose", "-q", "--quiet", "--log-format", "-h", "--help", "-V",
             "--version")  # fmt: skip
    unknown = [a for a in argv if a.startswith("-") and a.partition("=")[0] not in known]
    if unknown:
        return f"{unknown[0]} is not an option of {PROG}{closest(unknown[0], known)}"
    return "name a command"


def with_closest_option(message: str, parser: argparse.ArgumentParser, argv: Sequence[str]) -> str:
    """argparse's "unrecognized arguments: --jsn" said of the command that was given, with the
    option of that command closest to the first one it does not know."""
    prefix = "unrecognized arguments: "
    if not message.startswith(prefix):
        return message
    words = [a for a in argv if not a.startswith("-")]
    names, current = [], parser
    for word in words:
        found = _subcommand(current, word)
        if found is None:
            break
        names.append(word)
        current = found
    options = [o for o in current._option_string_actions if o.startswith("--")]
    unknown = message.removeprefix(prefix).split()[0].partition("=")[0]
    said = f"{' '.join(names)}: {message}" if names else message
    return said + (closest(unknown, options) if unknown.startswith("-") else "")


def _subcommand(parser: argparse.ArgumentParser, word: str) -> argparse.ArgumentParser | None:
    """The parser of ``word``, a command (or table's action) of ``parser``; None if none."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and word in action.choices:
            found: argparse.ArgumentParser = action.choices[word]
            return found
    return None
