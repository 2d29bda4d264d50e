"""The kiosk's first screen loads only what it draws: the packages' lazy namespaces and
the light imports of `qrpos.tui` keep the HTTP client, the retry library, numpy, the
sandbox and the outbox's SQLite out of the start (they load after the first screen,
in the services' worker). `benchmarks/startup.py` measures the time; this test guards
the class of regression (any module-level import that drags one back in)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

#: what `qrpos demo` and `qrpos run` import before the app's first screen
FIRST_SCREEN = ("qrpos.cli", "qrpos.cli.kiosk", "qrpos.kiosk.launch", "qrpos.tui.app")
#: heavy packages the first screen does not need (milliseconds and megabytes each)
NOT_BEFORE_FIRST_SCREEN = (
    "httpx",
    "httpcore",
    "stamina",
    "tenacity",
    "numpy",
    "zxingcpp",
    "uvicorn",
    "starlette",
    "sqlite3",
    "msgspec",
    "click",
    "pygments",
)
LAZY_PACKAGES = ("qrpos.ledger", "qrpos.service", "qrpos.reports")


def _modules_after(imports: tuple[str, ...]) -> set[str]:
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(imports)!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(n for n, m in sys.modules.items() if m is not None)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def test_the_first_screen_imports_nothing_heavy() -> None:
    loaded = _modules_after(FIRST_SCREEN)
    heavy = sorted(name for name in NOT_BEFORE_FIRST_SCREEN if name in loaded)
    assert heavy == [], f"loaded before the first screen: {heavy}"
    assert "textual.app" in loaded  # the probe itself works


def test_the_services_bring_the_client_without_its_command_line() -> None:
    loaded = _modules_after(("qrpos.service.client", "qrpos.ledger.desk"))
    assert "httpx" in loaded
    # httpx's own CLI (click, pygments) is a program the kiosk never runs
    assert "click" not in loaded and "pygments" not in loaded
    assert "httpx._main" not in loaded


def test_httpx_works_without_its_command_line() -> None:
    code = (
        "import qrpos.service, httpx\n"
        "t = httpx.MockTransport(lambda r: httpx.Response(201, json={'ok': True}))\n"
        "print(httpx.Client(transport=t).post('http://x/v1/charges').json()['ok'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_export_of_a_lazy_package_is_its_modules_own(package: str) -> None:
    module = importlib.import_module(package)
    where: dict[str, str] = module._WHERE
    assert sorted(where) == sorted(module.__all__)
    assert sorted(dir(module)) == sorted(module.__all__)
    for name, home in where.items():
        owner = importlib.import_module(home, package)
        assert getattr(module, name) is getattr(owner, name), name


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_a_name_a_lazy_package_lacks_is_an_attribute_error(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        _ = module.NoSuchThing
    assert not hasattr(module, "no_such_thing")


def test_a_lazy_name_is_loaded_once_and_then_kept_on_its_package() -> None:
    code = (
        "import sys, qrpos.reports as r\n"
        "assert 'qrpos.reports.localday' not in sys.modules\n"
        "first = r.local_day_of\n"
        "assert 'qrpos.reports.localday' in sys.modules and 'local_day_of' in vars(r)\n"
        "assert r.local_day_of is first\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
