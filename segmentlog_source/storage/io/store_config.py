"""How to reach an object store: the `fs.*` settings (`StoreConfig`) and the `pyarrow.fs` file
system each store's URIs are served by. `StoreConfig` never shows secret values in its repr.
"""

from __future__ import annotations

from dataclasses import dataclass
import os
from typing import Callable
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from ...errors import BadOptionError, StorageRequestError

# URI scheme -> the store that serves it (s3a/s3n are Hadoop's names for the same buckets).
STORE_OF_SCHEME = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs",
                   "abfs": "abfs", "abfss": "abfs", "hdfs": "hdfs", "viewfs": "hdfs"}

# The store settings (options `fs.<name>`), each with whether its value is a secret.
SETTINGS = {"s3.endpoint": False, "s3.region": False, "s3.anonymous": False,
            "s3.access.key": True, "s3.secret.key": True, "s3.session.token": True,
            "gs.endpoint": False, "gs.project": False, "gs.anonymous": False,
            "abfs.account.name": False, "abfs.endpoint": False, "abfs.account.key": True,
            "abfs.sas.token": True, "hdfs.user": False}

@dataclass(frozen=True)
class StoreConfig:
    """How to reach an object store: the `fs.*` options (lower-cased, without `fs.`) and the
    request policy. Picklable, so executors build the same file system as the planner."""

    settings: tuple[tuple[str, str], ...] = ()
    retries: int = 5                      # attempts after the first one
    retry_backoff_ms: int = 100           # first pause; doubles each time (with jitter)
    read_ahead_bytes: int = 8 * 1024 * 1024   # one ranged read of a segment fetches this much
    parallelism: int = 8                  # concurrent small-file reads while planning

    def get(self, name: str, default: str | None = None) -> str | None:
        return dict(self.settings).get(name, default)

    def __repr__(self) -> str:
        shown = ", ".join(f"fs.{k}={'*****' if SETTINGS.get(k, True) else v}"
                          for k, v in self.settings)
        return f"StoreConfig({shown})"


DEFAULT_CONFIG = StoreConfig()


# -- building pyarrow file systems ------------------------------------------------------------

def _flag(config: StoreConfig, name: str) -> bool:
    raw = (config.get(name) or "false").strip().lower()
    if raw not in ("true", "false"):
        raise BadOptionError(f"fs.{name}", raw, "expected true or false")
    return raw == "true"


def _endpoint(raw: str | None) -> tuple[str | None, str | None]:
    """`http://host:port` -> ("http", "host:port"); pyarrow wants them apart."""
    if not raw:
        return None, None
    if "://" in raw:
        scheme, rest = raw.split("://", 1)
        return scheme, rest.rstrip("/")
    return None, raw


def _s3(config: StoreConfig, _netloc: str) -> pafs.FileSystem:
    access, secret = config.get("s3.access.key"), config.get("s3.secret.key")
    if bool(access) != bool(secret):
        raise BadOptionError("fs.s3.access.key" if not access else "fs.s3.secret.key", "*****",
                             "give both fs.s3.access.key and fs.s3.secret.key, or neither")
    scheme, endpoint = _endpoint(config.get("s3.endpoint") or os.environ.get("AWS_ENDPOINT_URL_S3")
                                 or os.environ.get("AWS_ENDPOINT_URL"))
    kwargs = dict(region=config.get("s3.region") or os.environ.get("AWS_REGION")
                  or os.environ.get("AWS_DEFAULT_REGION") or ("us-east-1" if endpoint else None),
                  endpoint_override=endpoint, scheme=scheme or "https",
                  # segmentlog retries itself, so one policy (ours) governs every request
                  retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1),
                  connect_timeout=10, request_timeout=60)
    if _flag(config, "s3.anonymous"):
        kwargs["anonymous"] = True
    elif access:
        kwargs.update(access_key=access, secret_key=secret,
                      session_token=config.get("s3.session.token"))
    return pafs.S3FileSystem(**{k: v for k, v in kwargs.items() if v is not None})


def _gs(config: StoreConfig, _netloc: str) -> pafs.FileSystem:
    scheme, endpoint = _endpoint(config.get("gs.endpoint"))
    kwargs = dict(anonymous=_flag(config, "gs.anonymous"), endpoint_override=endpoint,
                  scheme=scheme, project_id=config.get("gs.project"))
    return pafs.GcsFileSystem(**{k: v for k, v in kwargs.items() if v is not None})


def _abfs_account(config: StoreConfig, netloc: str) -> str | None:
    # abfs://container@account.dfs.core.windows.net/path names the account in the URI
    host = netloc.split("@", 1)[1] if "@" in netloc else ""
    return (host.split(".", 1)[0] if host else None) or config.get("abfs.account.name") \
        or os.environ.get("AZURE_STORAGE_ACCOUNT_NAME")


def _abfs(config: StoreConfig, netloc: str) -> pafs.FileSystem:
    account = _abfs_account(config, netloc)
    if not account:
        raise BadOptionError("fs.abfs.account.name", None, "no storage account: use "
                             "abfs://container@account.dfs.core.windows.net/... or set it")
    scheme, authority = _endpoint(config.get("abfs.endpoint"))
    kwargs = dict(account_key=config.get("abfs.account.key")
                  or os.environ.get("AZURE_STORAGE_ACCOUNT_KEY"),
                  sas_token=config.get("abfs.sas.token"),
                  blob_storage_authority=authority, dfs_storage_authority=authority,
                  blob_storage_scheme=scheme, dfs_storage_scheme=scheme)
    return pafs.AzureFileSystem(account, **{k: v for k, v in kwargs.items() if v is not None})


def _hdfs(config: StoreConfig, netloc: str) -> pafs.FileSystem:
    host, _, port = netloc.rpartition(":") if ":" in netloc else (netloc, "", "")
    try:
        return pafs.HadoopFileSystem(host or "default", int(port) if port else 8020,
                                     user=config.get("hdfs.user"))
    except OSError as exc:
        raise StorageRequestError(f"cannot connect to HDFS at {netloc or 'default'}: {exc} "
                                  f"(pyarrow needs libhdfs: set HADOOP_HOME, JAVA_HOME and "
                                  f"CLASSPATH as for any libhdfs client)") from None


_BUILDERS: dict[str, Callable[[StoreConfig, str], pafs.FileSystem]] = {
    "s3": _s3, "gs": _gs, "abfs": _abfs, "hdfs": _hdfs}


def arrow_filesystem(store: str, config: StoreConfig, netloc: str) -> pafs.FileSystem:
    """The pyarrow file system of `store` (a value of STORE_OF_SCHEME) for one bucket/account."""
    return _BUILDERS[store](config, netloc)


def native_path(uri: str) -> str:
    """The path pyarrow's file system uses for `uri`: `bucket/key` or `/path` (HDFS)."""
    parts = urlsplit(uri)
    store = STORE_OF_SCHEME[parts.scheme.lower()]
    path = parts.path.rstrip("/")
    if store == "hdfs":
        return path or "/"
    container = parts.netloc.split("@", 1)[0] if store == "abfs" else parts.netloc
    return (container + path).rstrip("/")
