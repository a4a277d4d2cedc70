"""Encryption of Aiven's tiered storage: the per-segment AES-256 data key, wrapped with RSA, and
the AES-GCM chunks and indexes it encrypts.

The plugin wraps the data key with `RSA/NONE/OAEPWithSHA3-512AndMGF1Padding` from BouncyCastle,
which uses SHA3-512 for the OAEP hash *and* for MGF1 (the JDK's own provider would use SHA-1 for
MGF1), with an empty label; the manifest stores `<key pair id>:<base64>`. Each chunk is
IV (12 bytes) || ciphertext || tag (16 bytes), with the segment's AAD. pycryptodome does both
(the `cryptography` package refuses SHA3 in OAEP).

The private keys come from the reader option `remoteTierPrivateKey`: a PEM file (PKCS#8, as the
plugin's key pairs are configured), or `id=file,id2=file2` to pick one per key pair id (key
rotation leaves segments wrapped under older pairs).
"""

from __future__ import annotations

from dataclasses import dataclass
import functools
import re

from Crypto.Cipher import AES, PKCS1_OAEP
from Crypto.Hash import SHA3_512
from Crypto.PublicKey import RSA
from Crypto.Signature.pss import MGF1

from ...errors import BadOptionError, CorruptDataError
from ..io.filesystem import filesystem_for
from .aiven_manifest import GCM_IV_BYTES, GCM_OVERHEAD, GCM_TAG_BYTES, Encryption

PRIVATE_KEY_OPTION = "remoteTierPrivateKey"
DATA_KEY_BYTES = 32
_KEY_ID = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class PrivateKeyOption:
    """`remoteTierPrivateKey` parsed: one PEM path for every key pair (`default`), or one path
    per key pair id (`by_id`)."""

    default: str | None = None
    by_id: tuple[tuple[str, str], ...] = ()

    def path_for(self, key_pair_id: str) -> str | None:
        return dict(self.by_id).get(key_pair_id, self.default)


def parse_private_key_option(value: str | None) -> PrivateKeyOption | None:
    """None when the option is not given; `id=path[,id=path...]` when every comma-separated
    part is `<key pair id>=<path>`; otherwise the whole value is one path."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        raise BadOptionError(PRIVATE_KEY_OPTION, value, "is empty: give a PEM file, or "
                             "<key pair id>=<PEM file>,... (one per key pair)")
    parts = [p.strip() for p in text.split(",")]
    pairs = [p.partition("=") for p in parts]
    if all(eq and _KEY_ID.fullmatch(k) and v for k, eq, v in pairs):
        ids = [k for k, _, _ in pairs]
        if len(set(ids)) != len(ids):
            raise BadOptionError(PRIVATE_KEY_OPTION, value, "names a key pair id twice")
        return PrivateKeyOption(None, tuple((k, v) for k, _, v in pairs))
    return PrivateKeyOption(text, ())


@functools.lru_cache(maxsize=16)
def _load_private_key(path: str, store_config) -> RSA.RsaKey:
    fs, name = filesystem_for(path, store_config)
    try:
        pem = fs.read_all(name)
    except FileNotFoundError:
        raise BadOptionError(PRIVATE_KEY_OPTION, path, "no such file") from None
    text = pem.decode("ascii", "replace")
    if "ENCRYPTED" in text:
        raise BadOptionError(PRIVATE_KEY_OPTION, path, "is a passphrase-protected key: give "
                             "an unencrypted PKCS#8 PEM file (BEGIN PRIVATE KEY)")
    try:
        key = RSA.import_key(pem)
    except (ValueError, IndexError, TypeError) as err:
        raise BadOptionError(PRIVATE_KEY_OPTION, path, f"is not an RSA private key in PEM "
                             f"(PKCS#8, BEGIN PRIVATE KEY): {err}") from None
    if not key.has_private():
        raise BadOptionError(PRIVATE_KEY_OPTION, path, "holds a public key: the private key "
                             "of the key pair is needed to unwrap data keys")
    return key


def unwrap_data_key(encryption: Encryption, option: PrivateKeyOption | None, *,
                    segment: str, manifest_path: str, store_config=None) -> bytes:
    """The segment's AES data key, unwrapped with the private key the option gives for its key
    pair. No option: an error naming the segment and the option; a key that does not unwrap
    it (another pair's, or a damaged manifest): CorruptDataError naming the manifest."""
    key_id = encryption.key_pair_id
    path = None if option is None else option.path_for(key_id)
    if path is None:
        known = "" if option is None or not option.by_id else \
            f" (the option names key pairs {', '.join(k for k, _ in option.by_id)})"
        raise BadOptionError(PRIVATE_KEY_OPTION, None,
                             f"segment {segment} is encrypted (AES-GCM, data key wrapped with "
                             f"RSA key pair {key_id!r}): give {PRIVATE_KEY_OPTION}=<PEM file "
                             f"of that pair's private key> or {PRIVATE_KEY_OPTION}="
                             f"{key_id}=<PEM file>,...{known}")
    key = _load_private_key(path, store_config)
    cipher = PKCS1_OAEP.new(key, hashAlgo=SHA3_512,
                            mgfunc=lambda seed, length: MGF1(seed, length, SHA3_512))
    try:
        data_key = cipher.decrypt(encryption.wrapped_key)
    except (ValueError, TypeError):
        raise CorruptDataError(f"the data key of key pair {key_id!r} does not unwrap with the "
                               f"private key in {path} (RSA-OAEP, SHA3-512): a key of "
                               f"another key pair, or a damaged manifest", manifest_path) \
            from None
    if len(data_key) != DATA_KEY_BYTES:
        raise CorruptDataError(f"the unwrapped data key is {len(data_key)} bytes, not the "
                               f"{DATA_KEY_BYTES} of an AES-256 key", manifest_path)
    return data_key


def decrypt(blob, data_key: bytes, aad: bytes, *, path: str, what: str,
            position: int) -> bytes:
    """One IV || ciphertext || tag unit (a chunk of `.log`, an index of `.indexes`): its plain
    bytes, or CorruptDataError naming `path`, `what` (the chunk or index) and its `position`
    in the object when the tag does not verify. Never unverified bytes."""
    if len(blob) < GCM_OVERHEAD:
        raise CorruptDataError(f"{what} is {len(blob)} bytes, shorter than the IV and tag of "
                               f"an encrypted unit ({GCM_OVERHEAD})", path, position)
    view = memoryview(blob)
    cipher = AES.new(data_key, AES.MODE_GCM, nonce=bytes(view[:GCM_IV_BYTES]),
                     mac_len=GCM_TAG_BYTES)
    cipher.update(aad)
    try:
        return cipher.decrypt_and_verify(view[GCM_IV_BYTES:-GCM_TAG_BYTES],
                                         view[-GCM_TAG_BYTES:])
    except ValueError:
        raise CorruptDataError(f"{what} fails its AES-GCM authentication: its bytes were "
                               f"changed, or it was encrypted with another data key",
                               path, position) from None
