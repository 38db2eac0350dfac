"""The real Luau VM for tests and benchmarks, from the `pluau` wheel.

`import pluau` fails on Python 3.11 because its pure-Python wrapper uses 3.12-only syntax
(`type X = ...`); its native module works, so it is loaded straight from its file.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType


@cache
def pluau() -> ModuleType:
    spec = importlib.util.find_spec("pluau")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("pluau is not installed (it is in the test extras)")
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    native = next(package_dir.glob("_pluau*.so"))
    loader = importlib.machinery.ExtensionFileLoader("pluau._pluau", str(native))
    native_spec = importlib.util.spec_from_file_location("pluau._pluau", native, loader=loader)
    assert native_spec is not None
    module = importlib.util.module_from_spec(native_spec)
    loader.exec_module(module)
    return module
