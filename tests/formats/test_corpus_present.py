from tests.support.shared import CORPUS


def test_the_shared_model_corpus_is_there() -> None:
    # the autouse fixture skips (or, in CI, fails) with the reason when it is not
    assert any(CORPUS.rglob("*.rbxm")), f"no .rbxm files under {CORPUS}"
