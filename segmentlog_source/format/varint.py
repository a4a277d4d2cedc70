"""Kafka's zig-zag varints, and the byte copy the kernels use, in both numba and plain Python.

Every number inside a v2 record is a zig-zag varint (<= 5 bytes) or varlong (<= 10 bytes),
least significant 7-bit group first (Java's ByteUtils). These helpers are `register_jitable`:
plain Python when called from Python, compiled into the kernel (kernels.py) that calls them.
Readers never raise: a next position < 0 is minus an error code, which the kernels pass on.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload, register_jitable
import numpy as np

# Error codes of the readers; kernels.py continues the numbering.
ERR_TRUNCATED = 1        # a field runs past the end of the record / batch
ERR_VARINT_TOO_LONG = 2  # continuation bit still set on the 5th byte of a varint
ERR_VARLONG_TOO_LONG = 3  # ... on the 10th byte of a varlong
NULL_VARINT = 1  # -1 zig-zags to 0x01


def copy_bytes(dst, dst_pos, src, src_pos, n):
    """dst[dst_pos:dst_pos + n] = src[src_pos:src_pos + n]; compiled as one memcpy.

    (numba's slice assignment is a generic strided loop, several times slower than memcpy
    for the ~100-byte copies that dominate decoding.)
    """
    dst[dst_pos:dst_pos + n] = src[src_pos:src_pos + n]


@intrinsic
def _memcpy(typingctx, dst, dst_pos, src, src_pos, n):
    sig = types.void(dst, dst_pos, src, src_pos, n)

    def codegen(context, builder, signature, args):
        d = context.make_array(signature.args[0])(context, builder, args[0])
        s = context.make_array(signature.args[2])(context, builder, args[2])
        cgutils.raw_memcpy(builder, builder.gep(d.data, [args[1]]),
                           builder.gep(s.data, [args[3]]), args[4], 1)
        return context.get_dummy_value()

    return sig, codegen


@overload(copy_bytes)
def _copy_bytes_jit(dst, dst_pos, src, src_pos, n):
    def impl(dst, dst_pos, src, src_pos, n):
        _memcpy(dst, dst_pos, src, src_pos, n)
    return impl


@register_jitable
def read_varint(buf, pos, limit):
    """Kafka's zig-zag varint at buf[pos:limit] -> (value, next pos); next pos < 0 is -error.

    Like Java's ByteUtils.readVarint, a 5th byte keeps only the bits that fit in 32.
    We build `half` = unsigned >> 1 directly, so no intermediate needs more than 63 bits.
    """
    return _read_zigzag(buf, pos, limit, 5, 0x0F, 27, ERR_VARINT_TOO_LONG)


@register_jitable
def read_varlong(buf, pos, limit):
    """Zig-zag varlong, as read_varint (a 10th byte contributes only its lowest bit, as in Java)."""
    return _read_zigzag(buf, pos, limit, 10, 0x01, 62, ERR_VARLONG_TOO_LONG)


@register_jitable
def _read_zigzag(buf, pos, limit, max_bytes, last_mask, last_shift, too_long):
    """The loop of both: 7 bits a byte, least significant first; the last allowed byte keeps
    `last_mask` bits at `last_shift`; more bytes than `max_bytes` is error `too_long`."""
    if pos >= limit:
        return 0, -ERR_TRUNCATED
    b = int(buf[pos])
    if b < 0x80:  # the common one-byte case
        return (b >> 1) ^ -(b & 1), pos + 1
    neg = b & 1
    half = (b & 0x7F) >> 1
    for k in range(1, max_bytes):
        pos += 1
        if pos >= limit:
            return 0, -ERR_TRUNCATED
        b = int(buf[pos])
        if k < max_bytes - 1:
            half |= (b & 0x7F) << (7 * k - 1)
        else:
            half |= (b & last_mask) << last_shift
        if b < 0x80:
            return half ^ -neg, pos + 1
    return 0, -too_long


@register_jitable
def varint_size(value):
    """Bytes of the zig-zag varint/varlong encoding of `value` (1..10)."""
    m = value if value >= 0 else -value - 1  # zig-zag without ever forming value << 1
    rest = m >> 6
    size = 1
    while rest != 0:
        rest >>= 7
        size += 1
    return size


@register_jitable
def write_varint(out, pos, value):
    """Write the zig-zag varint/varlong of `value` at out[pos]; returns the next position."""
    if 0 <= value < 64:  # the common one-byte case (small lengths and deltas)
        out[pos] = value << 1
        return pos + 1
    sign = 0
    m = value
    if value < 0:
        sign = 1
        m = -value - 1
    low = ((m & 0x3F) << 1) | sign
    rest = m >> 6
    while rest != 0:
        out[pos] = low | 0x80
        pos += 1
        low = rest & 0x7F
        rest >>= 7
    out[pos] = low
    return pos + 1


# zig-zag m = (value >= 0 ? value : -value - 1) takes k + 1 bytes while m < 2 ** (6 + 7k)
_VARINT_LIMITS = np.array([1 << (6 + 7 * k) for k in range(9)], np.int64)


def varint_sizes(values: np.ndarray) -> np.ndarray:
    """varint_size over an int64 array, vectorized (the encoder's per-row sizes)."""
    m = np.where(values >= 0, values, -values - 1)
    return 1 + np.searchsorted(_VARINT_LIMITS, m, side="right")

