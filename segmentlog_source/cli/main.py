"""The `segmentlog` command: `dump`, `verify`, `reindex` and `generate`, one module each.

Bad input never ends in a traceback: a SegmentLogError (or an OS error naming a file) prints one
line `segmentlog: <message>` on stderr and exits 2, as argparse's usage errors do.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import SegmentLogError
from . import dump, generate, reindex, verify

COMMANDS = {"dump": dump, "verify": verify, "reindex": reindex, "generate": generate}
EXIT_BAD_INPUT = 2


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The command's docstring kept as written, and each flag's default (when it has one)."""

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        default = action.default
        if action.option_strings and not (default is None or default is False
                                          or default == argparse.SUPPRESS):
            text += " (default: %(default)s)"
        return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="segmentlog", description="Read, check, repair and create Kafka log directories "
        "exactly as a broker does, without a broker.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        sub = commands.add_parser(name, help=module.HELP, description=module.__doc__,
                                  formatter_class=_HelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):
        # Keys, values and file names are printed as text: a terminal that cannot show a
        # character gets a replacement, not a UnicodeEncodeError.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    try:
        return args.run(args)
    except SegmentLogError as err:
        _flush_quietly()
        print(f"segmentlog: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as err:
        if isinstance(err, BrokenPipeError):  # `segmentlog dump ... | head`: the reader left
            return _closed_stdout()
        _flush_quietly()
        where = f": {err.filename}" if err.filename else ""
        print(f"segmentlog: {err.strerror or err}{where}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


def _flush_quietly() -> None:
    """Put what was printed so far before the error line (stdout and stderr may be one file)."""
    try:
        sys.stdout.flush()
    except OSError:
        pass


def _closed_stdout() -> int:
    # Closing stdout now keeps Python from failing again when it flushes at exit.
    try:
        sys.stdout.close()
    except OSError:
        pass
    return 141  # what a shell reports for a process ended by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
