"""Package namespaces that load their submodules on first use (PEP 562).

`from qrpos.ledger import SaleResult` must not cost the kiosk's first screen the HTTP
client (httpx also loads its own command line, click and pygments with it): a package's
`__init__` names where each export lives, and the submodule is imported when the name is
first read. Type checkers see the real imports under `TYPE_CHECKING`; the same mapping
is checked against `__all__` by `tests/test_start_light.py`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(`__getattr__`, `__dir__`) for `package`, whose export `name` lives in the
    submodule `package + where[name]` (a relative name such as ".desk")."""

    def getattr_(name: str) -> Any:
        try:
            module = where[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), name)
        # kept on the package: the next read is a plain attribute, not this function
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted(where)

    return getattr_, dir_
