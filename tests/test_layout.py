"""The package layout the architecture promises: a pure core and separate adapters."""

import importlib


def test_every_layer_imports() -> None:
    for name in ("licore", "adapters_http", "adapters_storage", "adapters_crypto",
                 "adapters_formats", "adapters_protection"):
        assert importlib.import_module(name).__name__ == name
