"""The option declarations (plan/option_table.py) against the parsers: every declared default is
the parser's own (giving it changes nothing), every choice is accepted, and every declared name
passes the screening of its kinds. (The docs pages against the declarations: tests/docs.)"""

from __future__ import annotations

import re

import pytest

from segmentlog_source.plan import option_table
from segmentlog_source.plan.option_names import screen
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.stream_options import parse_stream_options
from segmentlog_source.plan.write_options import parse_write_options

PARSERS = {"read": parse_read_options, "stream": parse_stream_options,
           "write": parse_write_options}


def _literal_default(option: option_table.Option) -> str | None:
    """The default as a value a user could give (`earliest`, 1, 16384), or None where the
    declaration describes it (the topic's, the codec's)."""
    found = re.fullmatch(r"`([^`]+)`.*|(-?\d+)", option.default)
    if not found:
        return None
    return found.group(1) or found.group(2)


DEFAULTS = [(o, kind) for o in option_table.OPTIONS for kind in o.kinds
            if _literal_default(o) is not None]


@pytest.mark.parametrize("option, kind", DEFAULTS, ids=[f"{o.name}-{k}" for o, k in DEFAULTS])
def test_a_declared_default_is_the_parsers_default(option, kind):
    parse = PARSERS[kind]
    base = {"path": "/logs", "topic": "t"} if kind == "write" else {"path": "/logs"}
    value = _literal_default(option)
    if option.name == "startingOffsets" and kind == "stream":
        value = "latest"      # the declaration's "(`latest` in a stream)"
    assert parse({**base, option.name: value}) == parse(base), option.name


CHOICES = [o for o in option_table.OPTIONS if o.choices]


@pytest.mark.parametrize("option", CHOICES, ids=[o.name for o in CHOICES])
def test_every_declared_choice_is_accepted_and_documented(option):
    for choice in option.choices:
        assert f"`{choice}`" in option.values.lower()
        parse_read_options({"path": "/logs", option.name: choice})


def test_every_declared_name_passes_the_screening_of_its_kinds():
    for option in option_table.OPTIONS:
        for kind in option.kinds:
            assert option.name.lower() in screen({option.name: "x"}, kind).options


def test_every_option_has_a_documented_group_and_one_line():
    assert len({o.name.lower() for o in option_table.OPTIONS}) == len(option_table.OPTIONS)
    for option in option_table.OPTIONS:
        assert option.group in option_table.GROUPS and option.meaning
        assert "\n" not in option.meaning and "|" not in option.meaning + option.values


def test_the_decoding_choices_are_the_decoders():
    from segmentlog_source.values.decoding_spec import FORMATS, KEY_FORMATS, MODES
    assert option_table.choices("valueFormat") == FORMATS
    assert option_table.choices("keyFormat") == KEY_FORMATS
    assert option_table.choices("mode") == tuple(m.lower() for m in MODES)
