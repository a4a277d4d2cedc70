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


def int_option(opts: dict, name: str, default, minimum: int = 1, maximum: int = 2**63 - 1):
    """An integer option between `minimum` and `maximum` (`default` when absent)."""
    raw = opts.get(name.lower())
    if raw is None:
        return default
    if maximum < 2**63 - 1:
        wanted = f"an integer from {minimum} to {maximum}"
    else:
        wanted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise BadOptionError(name, raw, f"expected {wanted}") from None
    if not minimum <= value <= maximum:
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
