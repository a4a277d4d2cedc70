"""The `fs.*` options: how to reach an object store or HDFS (storage/io/store_config.py).

One documented prefix for every store: `fs.s3.endpoint`, `fs.s3.region`, `fs.s3.access.key`,
`fs.s3.secret.key`, `fs.s3.session.token`, `fs.s3.anonymous`, `fs.gs.*`, `fs.abfs.*`,
`fs.hdfs.user`, plus the request policy `fs.retries`, `fs.retryBackoffMs`, `fs.readAheadBytes`
and `fs.parallelism`. Secrets match Spark's default `spark.redaction.regex` (secret, token,
access.key), so Spark redacts them too; segmentlog itself never prints their values.
"""

from __future__ import annotations

import difflib
from typing import Mapping

from ..errors import BadOptionError
from ..storage.io.store_config import DEFAULT_CONFIG, SETTINGS, StoreConfig
from .option_values import int_option

PREFIX = "fs."
POLICY = {"retries": "retries", "retrybackoffms": "retry_backoff_ms",
          "readaheadbytes": "read_ahead_bytes", "parallelism": "parallelism"}
POLICY_BOUNDS = {"retries": (0, 100), "retrybackoffms": (1, 600_000),
                 "readaheadbytes": (1, 1024**3), "parallelism": (1, 256)}


def parse_store_options(options: Mapping[str, str]) -> StoreConfig:
    """The StoreConfig of Spark's (case-insensitive) options; unknown `fs.*` names are refused,
    so a typo never silently falls back to default credentials."""
    opts = {str(k).lower(): v for k, v in options.items()}
    settings, policy = [], {}
    for name, value in sorted(opts.items()):
        if not name.startswith(PREFIX):
            continue
        short = name[len(PREFIX):]
        if short in POLICY:
            low, high = POLICY_BOUNDS[short]
            policy[POLICY[short]] = int_option(opts, name, None, minimum=low, maximum=high)
        elif short in SETTINGS:
            settings.append((short, str(value)))
        else:
            known = sorted(PREFIX + k for k in set(SETTINGS) | set(POLICY))
            close = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
            advice = f"did you mean {' or '.join(close)}?" if close else "remove it"
            # (its value may be a secret: never shown)
            raise BadOptionError(name, "*****", f"unknown store option; {advice}")
    if not settings and not policy:
        return DEFAULT_CONFIG
    return StoreConfig(tuple(settings), **policy)
