"""Typed values of string options (Spark hands every option over as a string).

Each helper takes the lower-cased options dict and the option's documented name, and raises a
BadOptionError naming that option when the value is unusable.
"""

from __future__ import annotations

from ..errors import BadOptionError


def bool_option(opts: dict, name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise BadOptionError(name, raw, "expected true or false")


def int_option(opts: dict, name: str, default, minimum: int = 1):
    """An integer option of at least `minimum` (`default` when absent)."""
    raw = opts.get(name.lower())
    if raw is None:
        return default
    wanted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise BadOptionError(name, raw, f"expected {wanted}") from None
    if value < minimum:
        raise BadOptionError(name, raw, f"expected {wanted}")
    return value


def choice_option(opts: dict, name: str, choices: tuple[str, ...], default: str) -> str:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value not in choices:
        raise BadOptionError(name, raw, f"expected one of {', '.join(choices)}")
    return value
