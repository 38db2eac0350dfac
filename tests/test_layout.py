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
    # Methods and properties alike (a unit of work's repositories are properties), its own
    # and those it inherits from other protocols: a port split into a base and the rest is
    # still one port to whoever implements it.
    def names(cls: type) -> set[str]:
        return {name for base in cls.__mro__ if base not in (Protocol, object)
                and base.__module__ != "typing"
                for name in vars(base) if not name.startswith("_")}

    sizes = {cls.__name__: len(names(cls)) for cls in protocols}
    assert "Accounts" in sizes and "UnitOfWork" in sizes
    assert {name: n for name, n in sizes.items() if n > 15} == {}


def test_no_function_is_more_complex_than_the_house_allows() -> None:
    """Cyclomatic complexity (radon): at most 12 in the core and the HTTP adapter, where a
    function should read like the rule it implements, and at most 20 anywhere in `src/`
    (a long type switch reads better as a table). Closures and the methods of inner classes
    count as functions of their own, as `radon cc --show-closures` lists them."""
    from pathlib import Path

    from radon.complexity import add_inner_blocks, cc_visit

    src = Path(__file__).resolve().parents[1] / "src"
    over = {}
    for path in sorted(src.rglob("*.py")):
        part = path.relative_to(src).parts[0]
        limit = 12 if part in ("licore", "adapters_http") else 20
        for block in add_inner_blocks(cc_visit(path.read_text())):
            if block.complexity > limit:
                over[f"{path.relative_to(src)}:{block.lineno} {block.name}"] = block.complexity
    assert over == {}
