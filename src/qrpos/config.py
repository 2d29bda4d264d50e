"""Configuration: command-line options, then environment, then the TOML file, then defaults.

The TOML file is `--config PATH` or `/etc/qrpos/config.toml`. A missing default file is
fine (a fresh install has none); a missing file named explicitly is an error. The
password is never configuration: see `qrpos.credentials`.

Recognised TOML keys (all optional)::

    base_url = "https://pay.example.mn"
    username = "term_ab12cd34"
    state_dir = "/var/lib/qrpos"
    request_timeout = 30
    language = "mn"            # or "en"

    [scanner]                  # read by qrpos.scanner; every key is listed in
    source = "auto"            # qrpos/scanner/sources.py (picamera | webcam | replay ...)
    decoder = "zxing"          # zxing (default, measured faster) | zbar

    [customer_display]         # read by qrpos.peripherals.display_settings
    device = "off"             # kms:HDMI-A-2 | vfd:/dev/ttyUSB0@9600 | off (default)
    protocol = "escpos"        # a pole display's commands: escpos | cd5220
    codepage = "pc866"         # pc866 | ascii
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrpos import spec
from qrpos.errors import QrposError
from qrpos.said import Said, os_reason, say
from qrpos.statedir import write_private

DEFAULT_CONFIG_PATH = Path("/etc/qrpos/config.toml")
LANGUAGES = ("mn", "en")
#: in the state dir: the paired terminal's username (never the password)
PAIRING_FILE = "terminal.toml"


class ConfigError(QrposError):
    """The configuration cannot be used; the message says which setting and why."""


@dataclass(frozen=True)
class Config:
    """The settings every part of qrpos reads. Build it with `load_config`."""

    base_url: str | None = None
    username: str | None = None
    state_dir: Path = field(default_factory=lambda: default_state_dir({}))
    request_timeout_s: float = spec.CLIENT_TIMEOUT_S
    language: str = "mn"
    #: the language was asked for on this command line (`--language`): it wins over the
    #: one last chosen on screen with `L` (which otherwise wins over the file and the env)
    language_pinned: bool = False
    #: where choices made on screen (the language) are remembered; the state dir when None
    #: (the demo keeps them across runs although its outbox is thrown away)
    settings_dir: Path | None = None
    #: the folder the end-of-day export suggests; the state dir when None
    export_dir: Path | None = None
    #: owner screens that ask for the manager PIN before they open (`[owner] pin_screens`
    #: or QRPOS_OWNER_PIN_SCREENS): "history", "end_of_day"; refunds always ask for it
    owner_pin_screens: frozenset[str] = frozenset()
    #: the `[scanner]` table of the TOML file, as read (defaults live in qrpos.scanner)
    scanner: Mapping[str, Any] = field(default_factory=dict)
    #: the `[sound]` table, as read (defaults live in qrpos.peripherals.sound)
    sound: Mapping[str, Any] = field(default_factory=dict)
    #: the `[printer]` table, as read, with `QRPOS_PRINTER` over its `device`
    printer: Mapping[str, Any] = field(default_factory=dict)
    #: the `[customer_display]` table, as read, with `QRPOS_CUSTOMER_DISPLAY` over its
    #: `device` (checked by qrpos.peripherals.display_settings)
    customer_display: Mapping[str, Any] = field(default_factory=dict)
    #: where the values came from, for `qrpos doctor`
    source_path: Path | None = None
    #: where the base URL was set ("--base-url", "QRPOS_BASE_URL" or the file's path), so
    #: that a fix names the place to change it
    base_url_from: str | None = None

    @property
    def settings_home(self) -> Path:
        """Where the kiosk remembers what was chosen on its screens."""
        return self.settings_dir or self.state_dir

    @property
    def export_home(self) -> Path:
        """Where the end-of-day CSV is suggested."""
        return self.export_dir or self.state_dir

    @property
    def ledger_path(self) -> Path:
        """The outbox database."""
        return self.state_dir / "outbox.sqlite3"

    def require_service(self) -> tuple[str, str]:
        """(base_url, username), or a `ConfigError` naming what to set."""
        if not self.base_url:
            raise ConfigError(
                say(
                    "error.no_base_url",
                    "no service base URL: set QRPOS_BASE_URL or base_url in config",
                )
            )
        if not self.username:
            raise ConfigError(
                say(
                    "error.no_username",
                    "no terminal username: pair the terminal (qrpos pair) or set QRPOS_USERNAME",
                )
            )
        return self.base_url, self.username


def default_state_dir(env: Mapping[str, str]) -> Path:
    """systemd's `$STATE_DIRECTORY` when set, else the XDG state dir of the user."""
    if env.get("STATE_DIRECTORY"):
        # systemd may pass several, colon-separated; ours is the first
        return Path(env["STATE_DIRECTORY"].split(":")[0])
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "qrpos"


def write_pairing(state_dir: Path, username: str) -> Path:
    """Remember the paired terminal's username in the state dir (atomically)."""
    if not spec.USERNAME_RE.match(username):
        raise ConfigError(_not_username(username))
    # run as root by provision.sh: no planted link is followed, the kiosk user owns it
    return write_private(state_dir, PAIRING_FILE, f'username = "{username}"\n'.encode())


def _not_username(value: object) -> Said:
    return say(
        "config.not_username",
        "username {value} is not a terminal username ({prefix} followed by {count} characters)",
        value=repr(value),
        prefix=spec.USERNAME_PREFIX,
        count=spec.USERNAME_SUFFIX_LEN,
    )


def _not_a_table(table: str) -> Said:
    return say("config.not_a_table", "[{table}] in the config file must be a table", table=table)


def _not_toml(path: Path, exc: tomllib.TOMLDecodeError) -> Said:
    """Where the TOML is broken (tomllib's own words are English: the place is enough)."""
    where = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
    if where is None:
        return say("config.not_toml", "config file {path} is not valid TOML", path=str(path))
    return say(
        "config.not_toml_at",
        "config file {path} is not valid TOML (line {line}, column {column})",
        path=str(path),
        line=int(where.group(1)),
        column=int(where.group(2)),
    )


def _read_toml(path: Path, explicit: bool) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        if explicit:
            raise ConfigError(
                say("config.missing", "config file {path} does not exist", path=str(path))
            ) from None
        return {}
    except PermissionError:
        raise ConfigError(
            say(
                "config.unreadable",
                "config file {path} is not readable by this user",
                path=str(path),
            )
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(_not_toml(path, exc)) from None
    except UnicodeDecodeError:
        raise ConfigError(
            say(
                "config.not_utf8",
                "config file {path} is not valid TOML: not UTF-8 text",
                path=str(path),
            )
        ) from None
    except (OSError, ValueError) as exc:  # a path through a file, a NUL in the path
        why = os_reason(exc) if isinstance(exc, OSError) else Said.plain(str(exc))
        raise ConfigError(
            say(
                "config.cannot_read",
                "config file {path} cannot be read ({why})",
                path=str(path),
                why=why,
            )
        ) from None


def _setting_text(name: str, value: Any) -> str | None:
    """A setting that must be text: None when absent, else a str without NUL."""
    if value is None:
        return None
    if not isinstance(value, str) or "\x00" in value:
        raise ConfigError(
            say(
                "config.not_text",
                "{name} must be text (a quoted string in the config file)",
                name=name,
            )
        )
    return value


def load_config(
    *,
    config_path: Path | None = None,
    options: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """Merge options > environment > TOML > defaults into a `Config`.

    `options` keys: base_url, username, state_dir, request_timeout, language (None or
    absent means "not given").
    """
    env = os.environ if env is None else env
    opts = {k: v for k, v in (options or {}).items() if v is not None}
    explicit = config_path is not None or bool(env.get("QRPOS_CONFIG"))
    path = config_path or Path(env.get("QRPOS_CONFIG") or DEFAULT_CONFIG_PATH)
    toml = _read_toml(path, explicit)

    def pick(key: str, env_name: str | None) -> Any:
        if key in opts:
            return opts[key]
        if env_name and env.get(env_name):
            return env[env_name]
        return toml.get(key)

    state_dir_raw = opts.get("state_dir") or env.get("QRPOS_STATE_DIR")
    if state_dir_raw:
        state_dir = Path(state_dir_raw)
    elif env.get("STATE_DIRECTORY"):
        state_dir = default_state_dir(env)
    elif toml.get("state_dir"):
        state_dir = Path(_setting_text("state_dir", toml["state_dir"]) or "")
    else:
        state_dir = default_state_dir(env)

    timeout_raw = pick("request_timeout", "QRPOS_REQUEST_TIMEOUT")
    timeout = spec.CLIENT_TIMEOUT_S
    if timeout_raw is not None:
        try:
            if isinstance(timeout_raw, bool):
                raise TypeError(timeout_raw)
            timeout = float(timeout_raw)
        except (TypeError, ValueError):
            raise ConfigError(
                say(
                    "config.timeout_not_number",
                    "request timeout {value} is not a number",
                    value=repr(timeout_raw),
                )
            ) from None
        if not 0 < timeout <= 300:
            raise ConfigError(
                say("config.timeout_range", "request timeout must be between 0 and 300 seconds")
            )

    language = _setting_text("language", pick("language", "QRPOS_LANGUAGE")) or "mn"
    if language not in LANGUAGES:
        raise ConfigError(
            say(
                "config.language",
                "language {value} is not one of {choices}",
                value=repr(language),
                choices=", ".join(LANGUAGES),
            )
        )

    base_url = _setting_text("base_url", pick("base_url", "QRPOS_BASE_URL"))
    if "base_url" in opts:
        base_url_from: str | None = "--base-url"
    elif env.get("QRPOS_BASE_URL"):
        base_url_from = "QRPOS_BASE_URL"
    else:
        base_url_from = f"base_url in {path}" if toml.get("base_url") else None
    username = _setting_text("username", pick("username", "QRPOS_USERNAME"))
    if username is None:
        # written by `qrpos pair` (the username is not a secret; the password is not here)
        username = _read_toml(state_dir / PAIRING_FILE, explicit=False).get("username")
    if username is not None and not spec.USERNAME_RE.match(str(username)):
        raise ConfigError(_not_username(username))
    scanner = toml.get("scanner", {})
    if not isinstance(scanner, dict):
        raise ConfigError(_not_a_table("scanner"))
    sound = toml.get("sound", {})
    if not isinstance(sound, dict):
        raise ConfigError(_not_a_table("sound"))
    printer = toml.get("printer", {})
    if not isinstance(printer, dict):
        raise ConfigError(_not_a_table("printer"))
    if env.get("QRPOS_PRINTER"):
        printer = {**printer, "device": env["QRPOS_PRINTER"]}
    customer_display = toml.get("customer_display", {})
    if not isinstance(customer_display, dict):
        raise ConfigError(_not_a_table("customer_display"))
    if env.get("QRPOS_CUSTOMER_DISPLAY"):
        customer_display = {**customer_display, "device": env["QRPOS_CUSTOMER_DISPLAY"]}
    pin_screens = _pin_screens(env.get("QRPOS_OWNER_PIN_SCREENS"), toml.get("owner", {}))
    return Config(
        base_url=str(base_url) if base_url else None,
        username=str(username) if username else None,
        state_dir=state_dir,
        request_timeout_s=timeout,
        language=language,
        scanner=scanner,
        sound=sound,
        printer=printer,
        customer_display=customer_display,
        owner_pin_screens=pin_screens,
        source_path=path if toml else None,
        base_url_from=base_url_from if base_url else None,
    )


#: the owner screens that may be put behind the manager PIN
PIN_SCREENS = ("history", "end_of_day")


def _pin_screens(from_env: str | None, owner: Any) -> frozenset[str]:
    """The owner screens behind the PIN: QRPOS_OWNER_PIN_SCREENS (comma-separated) over
    `[owner] pin_screens` (a list); ConfigError naming the ones that do not exist."""
    if not isinstance(owner, dict):
        raise ConfigError(_not_a_table("owner"))
    if from_env is not None:
        names = [n.strip() for n in from_env.split(",") if n.strip()]
    else:
        raw = owner.get("pin_screens", [])
        if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
            raise ConfigError(
                say("config.pin_screens_list", "[owner] pin_screens must be a list of screen names")
            )
        names = raw
    unknown = sorted(set(names) - set(PIN_SCREENS))
    if unknown:
        raise ConfigError(
            say(
                "config.pin_screens_unknown",
                "[owner] pin_screens {unknown}: the screens are {known}",
                unknown=", ".join(unknown),
                known=", ".join(PIN_SCREENS),
            )
        )
    return frozenset(names)
