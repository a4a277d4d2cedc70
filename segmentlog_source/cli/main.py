"""The `segmentlog` command: `dump`, `verify`, `reindex` and `generate`, one module each.

Every path may be a local path or a URI of an object store or HDFS (s3://, s3a://, gs://,
abfs://, hdfs://, file://), served by storage.io.filesystem_for; `--fs-option NAME=VALUE`
(repeatable, before or after the command) passes the `fs.*` store options. Stores are only read:
`reindex` and `generate` refuse a URI before writing anything.

Bad input never ends in a traceback: a SegmentLogError (or an OS error naming a file) prints one
line `segmentlog: <message>` on stderr and exits 2, as argparse's usage errors do. Option values
given with --fs-option are never printed (they may be credentials).
"""

from __future__ import annotations

import argparse
import sys

from ..cli import dump, generate, reindex, verify
from ..errors import BadOptionError, SegmentLogError
from ..plan.store_options import PREFIX, parse_store_options
from ..storage.io.store_config import StoreConfig

COMMANDS = {"dump": dump, "verify": verify, "reindex": reindex, "generate": generate}
EXIT_BAD_INPUT = 2
FS_OPTION_HELP = ("an object-store option for URI paths, e.g. fs.s3.endpoint=http://127.0.0.1:9000 "
                  "or fs.s3.region=eu-west-1 (repeatable; see the README). Without it the "
                  "store's standard environment variables and config files apply")


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
    parser.add_argument("--fs-option", action="append", dest="fs_options", metavar="NAME=VALUE",
                        help=FS_OPTION_HELP)
    # Also accepted after the command (`segmentlog dump --fs-option ...`). A separate dest: a
    # subcommand's values would otherwise replace the ones given before the command.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--fs-option", action="append", dest="command_fs_options",
                        metavar="NAME=VALUE", default=argparse.SUPPRESS, help=FS_OPTION_HELP)
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
    try:
        args.store_config = store_config(
            (args.fs_options or []) + getattr(args, "command_fs_options", []))
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
