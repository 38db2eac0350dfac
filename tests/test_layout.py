"""The package layout the architecture promises: a pure core and separate adapters."""

import importlib


def test_every_layer_imports() -> None:
    for name in ("licore", "adapters_http", "adapters_storage", "adapters_crypto",
                 "adapters_formats", "adapters_protection"):
        assert importlib.import_module(name).__name__ == name


def test_no_port_has_more_than_fifteen_methods() -> None:
    import inspect
    from typing import Protocol

    from licore import ports, storage_ports

    protocols = [cls for module in (ports, storage_ports)
                 for _, cls in inspect.getmembers(module, inspect.isclass)
                 if Protocol in cls.__mro__[1:] and cls.__module__ == module.__name__]
    # Methods and properties alike (a unit of work's repositories are properties).
    sizes = {cls.__name__: sum(1 for name in vars(cls) if not name.startswith("_"))
             for cls in protocols}
    assert "Accounts" in sizes and "UnitOfWork" in sizes
    assert {name: n for name, n in sizes.items() if n > 15} == {}
