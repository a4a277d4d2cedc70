"""The `segmentlog` command: dump, verify, reindex, generate, stats, explain, retain, compact,
config and cluster, one module each.

Every path may be a local path or a URI of an object store or HDFS (s3://, s3a://, gs://,
abfs://, hdfs://, file://), served by storage.io.filesystem_for; `--fs-option NAME=VALUE`
(repeatable, before or after the command) passes the `fs.*` store options. Stores are only read:
`reindex`, `generate`, `retain`, `compact` and `config --set` refuse a URI before writing
anything.

Bad input never ends in a traceback: a SegmentLogError (or an OS error naming a file) prints one
line `segmentlog: <message>` on stderr and exits 2, as the usage errors do, whose first line
names the option too. --debug adds the traceback after that line. Option values given with
--fs-option are never printed (they may be credentials).
"""

from __future__ import annotations

import argparse
import re
from importlib.metadata import version as _dist_version
import logging
import sys
import traceback

from ..cli import (cluster, compact, dump, explain, generate, reindex, retain, stats,
                   topic_config, verify)
from ..errors import BadOptionError, CorruptDataError, FileChangedError, SegmentLogError
from ..plan.store_options import PREFIX, parse_store_options
from ..storage.io.store_config import StoreConfig
from ..storage.log_files import INDEX_SUFFIXES

COMMANDS = {"dump": dump, "verify": verify, "reindex": reindex, "generate": generate,
            "stats": stats, "explain": explain, "retain": retain, "compact": compact,
            "config": topic_config, "cluster": cluster}
EXIT_BAD_INPUT = 2
EXIT_INTERNAL_ERROR = 70   # sysexits' EX_SOFTWARE: a bug, not the input
FS_OPTION_HELP = ("an object-store option for URI paths, e.g. "
                  "fs.s3.endpoint=http://127.0.0.1:9000 or fs.s3.region=eu-west-1 "
                  "(repeatable; see the docs: Object stores). Without it the "
                  "store's standard environment variables and config files apply")
QUIET_HELP = "no progress bar (one is shown only when stdout and stderr are terminals)"
DEBUG_HELP = "on an error, also print the traceback (for bug reports)"


class _Parser(argparse.ArgumentParser):
    """argparse, with a first line that names what is wrong (argparse starts with the usage)."""

    def error(self, message: str):
        # an unknown command: argparse's line lists every command, which the usage below shows
        message = re.sub(r"^argument COMMAND: invalid choice: (.*?) \(choose from .*\)$",
                         r"unknown command \1", message)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see '{self.prog} --help')\n"
                                  f"{self.format_usage()}")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The command's docstring kept as written, and each flag's default (when it has one)."""

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        default = action.default
        if action.option_strings and not (default is None or default is False
                                          or default == [] or default == argparse.SUPPRESS):
            text += " (default: %(default)s)"
        return text


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="segmentlog", description="Read, check, repair and create Kafka log directories "
        "exactly as a broker does, without a broker.")
    parser.add_argument("--fs-option", action="append", dest="fs_options", metavar="NAME=VALUE",
                        help=FS_OPTION_HELP)
    parser.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    parser.add_argument("--version", action="version",
                        version=f"segmentlog {_dist_version('segmentlog')}",
                        help="print the version of segmentlog and exit")
    # Also accepted after the command (`segmentlog dump --fs-option ...`). A separate dest: a
    # subcommand's values would otherwise replace the ones given before the command; the flags
    # are SUPPRESSed when absent there so that they do not reset the ones given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--fs-option", action="append", dest="command_fs_options",
                        metavar="NAME=VALUE", default=argparse.SUPPRESS, help=FS_OPTION_HELP)
    common.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                        help=QUIET_HELP)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help=DEBUG_HELP)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        sub = commands.add_parser(name, help=module.HELP, description=module.__doc__,
                                  formatter_class=_HelpFormatter, parents=[common])
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
    _log_to_stderr(args.debug)
    try:
        args.store_config = store_config(
            (args.fs_options or []) + getattr(args, "command_fs_options", []))
        return args.run(args)
    except SegmentLogError as err:
        return _report(args, str(err), EXIT_BAD_INPUT, _hint(err))
    except OSError as err:
        if isinstance(err, BrokenPipeError):  # `segmentlog dump ... | head`: the reader left
            return _closed_stdout()
        where = f": {err.filename}" if err.filename else ""
        return _report(args, f"{err.strerror or err}{where}", EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        return 130
    except Exception as err:   # a bug: still one line, the traceback with --debug
        return _report(args, f"internal error, {type(err).__name__}: {err} (a bug; run again "
                       "with --debug and report the traceback)", EXIT_INTERNAL_ERROR)


def _hint(err: SegmentLogError) -> str:
    """What to do, where the message of the error cannot know it."""
    if not isinstance(err, CorruptDataError) or isinstance(err, FileChangedError):
        return ""
    if (err.path or "").endswith(INDEX_SUFFIXES):
        return " (`segmentlog reindex DIR` rebuilds it)"
    return " (`segmentlog verify DIR` for a full report)"


def _report(args, message: str, status: int, hint: str = "") -> int:
    _flush_quietly()
    # The first line says it all; details an error carries (a whole path, a long list) follow.
    first, *details = message.split("\n")
    print(f"segmentlog: {first}{hint}", file=sys.stderr)
    for line in details:
        print(f"  {line}", file=sys.stderr)
    if args.debug:
        traceback.print_exc(file=sys.stderr)
    return status


class _Prefixed(logging.Formatter):
    """`segmentlog: message`, once (some modules prefix their messages for Spark's logs)."""

    def format(self, record) -> str:
        text = super().format(record)
        return text if text.startswith("segmentlog: ") else f"segmentlog: {text}"


class _ToStderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a message comes (main may run in-process, under
    a test's captured streams)."""

    def __init__(self):
        super().__init__()
        self.setFormatter(_Prefixed())

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


def _log_to_stderr(debug: bool) -> None:
    """segmentlog's warnings (skipped data, say) as `segmentlog: ...` lines on stderr; with
    --debug, every message down to debug ones. Installed once; nothing else is changed."""
    logger = logging.getLogger("segmentlog")
    if not any(isinstance(h, _ToStderr) for h in logger.handlers):
        logger.addHandler(_ToStderr())
    if debug:
        logger.setLevel(logging.DEBUG)


def store_config(pairs: list[str]) -> StoreConfig:
    """The StoreConfig of `--fs-option NAME=VALUE` flags (a later flag wins over an earlier one
    of the same name). Errors name the option, never its value."""
    options: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            # Without '=' the text may be a pasted secret: it is not shown either.
            raise BadOptionError("--fs-option", "*****", "expected NAME=VALUE, e.g. "
                                 "--fs-option fs.s3.endpoint=http://127.0.0.1:9000")
        if not name.lower().startswith(PREFIX):
            raise BadOptionError("--fs-option", f"{name}=*****", f"store options are named "
                                 f"{PREFIX}*, e.g. fs.s3.region=eu-west-1")
        options[name.lower()] = value
    return parse_store_options(options)


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
