"""The format tests read real Roblox files from the shared corpus. Without it they would
collect nothing and pass in silence, so every one of them, and one named check, says what is
missing and how to point the tests at it (and fails under CI=true)."""

from __future__ import annotations

import pytest

from tests.conftest import IN_CI
from tests.support.shared import CORPUS

MISSING = (f"the model corpus {CORPUS} is missing: the tests read the rbx-test-files corpus "
           f"from ../shared/test-data beside the checkout; set LICORE_SHARED to a folder that "
           f"holds test-data/rbx-test-files")


@pytest.fixture(autouse=True)
def _corpus_present(request: pytest.FixtureRequest) -> None:
    reads_corpus = any(hasattr(request.module, name)
                       for name in ("CORPUS", "BINARIES", "XMLS", "FILES", "label"))
    if reads_corpus and not CORPUS.is_dir():
        if IN_CI:
            pytest.fail(MISSING)
        pytest.skip(MISSING)
