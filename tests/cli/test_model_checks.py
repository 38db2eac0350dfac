"""A big upload's check runs in a spawned process of its own (licore_cli/model_checks.py):
what it answers, and what it refuses, are what the check in the serving process says."""

from __future__ import annotations

import pytest

from adapters_formats.codec import RobloxModelCodec
from licore.builds.errors import ModelFormatError
from licore_cli.model_checks import OffProcessChecks, can_spawn
from tests.formats.test_markup_bounds import attributes, folder
from tests.support.models import product_model

HERE = RobloxModelCodec()
AWAY = OffProcessChecks(HERE, least_bytes=1)  # every file goes to a process of its own


def test_pytest_can_spawn_the_checking_process() -> None:
    assert can_spawn()


@pytest.mark.parametrize("data", [HERE.write(product_model("xml")),
                                  HERE.write(product_model("binary"))],
                         ids=["xml", "binary"])
def test_a_check_away_answers_what_a_check_here_does(data: bytes) -> None:
    assert AWAY.check(data) == HERE.check(data)


def test_a_refusal_away_is_the_refusal_here() -> None:
    data = folder(attributes(1_000))
    with pytest.raises(ModelFormatError) as here:
        HERE.check(data)
    with pytest.raises(ModelFormatError) as away:
        AWAY.check(data)
    assert away.value.reason == here.value.reason == "an XML element has more than 16 attributes"


def test_small_files_and_everything_else_stay_here() -> None:
    codec = OffProcessChecks(HERE)
    data = HERE.write(product_model("xml"))
    assert len(data) < codec.least_bytes
    assert codec.check(data) == HERE.check(data)
    assert codec.read(data).format == "xml"
    assert [(s.path, s.source) for s in codec.read_sources(data).scripts] == [
        (s.path, s.source) for s in HERE.read_sources(data).scripts]
