"""Loading the settings: every option of the table in ``tms.settings``, read from tms.toml and then from
TMS_<SECTION>_<KEY> env vars, checked against its type and bounds.

A bad value stops start-up with one line naming the key (``ConfigError``), so a typo never runs
silently with a default.
"""

from __future__ import annotations

import difflib
import math
import os
import socket
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from tms.settings import (
    EXTRA_ENV,
    OTHER_ENV,
    SETTINGS,
    SETTINGS_BY_NAME,
    DecimalSetting,
    FlagSetting,
    NumberSetting,
    Setting,
    TextSetting,
)


class ConfigError(Exception):
    """A configuration problem, reported as one line naming the offending key."""


@dataclass(frozen=True)
class Config:
    values: dict[str, Any] = field(default_factory=dict)
    source: str = "defaults"
    # names set by the file or the environment (not defaults), e.g. to derive base_url from the port
    explicit: frozenset[str] = frozenset()
    # one line each, shown at start: unknown TMS_* variables, with the nearest known name
    warnings: tuple[str, ...] = ()

    @overload
    def get(self, name: TextSetting) -> str: ...
    @overload
    def get(self, name: NumberSetting) -> int: ...
    @overload
    def get(self, name: DecimalSetting) -> float: ...
    @overload
    def get(self, name: FlagSetting) -> bool: ...

    def get(self, name: str) -> Any:
        """The setting's value, of its declared type (coerced when the configuration was loaded)."""
        return self.values[name]

    # Typed shortcuts for the keys the code reads most.
    @property
    def data_dir(self) -> Path:
        return Path(self.values["storage.data_dir"])

    @property
    def db_path(self) -> Path:
        return self.data_dir / "tms.db"

    @property
    def database_url(self) -> str:
        return str(self.values["storage.database_url"])

    @property
    def attachments_dir(self) -> Path:
        return self.data_dir / "attachments"

    @property
    def base_url(self) -> str:
        return str(self.values["server.base_url"]).rstrip("/")

    @property
    def production(self) -> bool:
        return self.base_url.startswith("https://")

    def with_overrides(self, **overrides: Any) -> Config:
        values = dict(self.values)
        for dotted, raw in overrides.items():
            name = dotted.replace("__", ".")
            values[name] = _coerce(SETTINGS_BY_NAME[name], raw, name)
        return Config(values, self.source, self.explicit | {n.replace("__", ".") for n in overrides}, self.warnings)

    def with_derived_base_url(self) -> Config:
        """Without an explicit base_url, links point at the address the server listens on.

        Listening on every interface (``0.0.0.0``) means teammates on other machines are expected:
        their invitation and setup links then name this machine's host name, not 127.0.0.1, which
        would point each teammate at their own computer.
        """
        if "server.base_url" in self.explicit:
            return self
        host = self.values["server.host"]
        shown = (socket.gethostname() or "127.0.0.1") if host in ("0.0.0.0", "::", "") else host
        values = dict(self.values, **{"server.base_url": f"http://{shown}:{self.values['server.port']}"})
        return Config(values, self.source, self.explicit, self.warnings)


def _coerce(setting: Setting, raw: Any, origin: str, *, from_text: bool = True) -> Any:
    """Checks (and, for environment text, parses) one value; TOML values must already have the type."""
    expected = type(setting.default)
    parse = from_text and isinstance(raw, str) and expected is not str
    value: Any = _parse_text(raw, expected, origin) if parse else raw
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ConfigError(f"{origin}: expected {expected.__name__}, got {raw!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{origin}: must be a finite number, got {raw!r}")
    if setting.minimum is not None and value < setting.minimum:
        raise ConfigError(f"{origin}: must be >= {setting.minimum:g}, got {raw!r}")
    if setting.maximum is not None and value > setting.maximum:
        raise ConfigError(f"{origin}: must be <= {setting.maximum:g}, got {raw!r}")
    if setting.choices is not None and value not in setting.choices:
        raise ConfigError(f"{origin}: must be one of {', '.join(setting.choices)}, got {raw!r}")
    if setting.name == "server.base_url" and not str(value).startswith(("http://", "https://")):
        raise ConfigError(f"{origin}: must start with http:// or https://, got {raw!r}")
    if setting.name == "storage.database_url" and value and not str(value).startswith(("postgresql://", "postgres://")):
        # the password may be in the URL: name the key and the expected shape, never echo the value
        raise ConfigError(f"{origin}: must be empty (SQLite) or a postgresql://user:pass@host:port/db URL")
    return value


def _parse_text(raw: str, expected: type, origin: str) -> Any:
    text = raw.strip()
    if expected is bool:
        lowered = text.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{origin}: expected a boolean, got {raw!r}")
    try:
        return expected(text)
    except ValueError:
        raise ConfigError(f"{origin}: expected {expected.__name__}, got {raw!r}") from None


def find_config_file(explicit: str | None) -> Path | None:
    """--config FILE, else $TMS_CONFIG, else ./tms.toml when present."""
    if explicit:
        return Path(explicit)
    if os.environ.get("TMS_CONFIG"):
        return Path(os.environ["TMS_CONFIG"])
    local = Path("tms.toml")
    return local if local.is_file() else None


def load_config(path: Path | None = None, environ: dict[str, str] | None = None) -> Config:
    env = os.environ if environ is None else environ
    values = {s.name: s.default for s in SETTINGS}
    explicit: set[str] = set()
    source = "defaults"
    if path is not None:
        from_file = _read_file(path)
        values.update(from_file)
        explicit.update(from_file)
        source = str(path)
    for setting in SETTINGS:
        if setting.env_name in env:
            values[setting.name] = _coerce(setting, env[setting.env_name], setting.env_name)
            explicit.add(setting.name)
    for env_name, name in EXTRA_ENV.items():
        if env_name in env:
            values[name] = _coerce(SETTINGS_BY_NAME[name], env[env_name], env_name)
            explicit.add(name)
    return Config(values, source, frozenset(explicit), tuple(_unknown_env_warnings(env)))


def _unknown_env_warnings(env: Mapping[str, str]) -> list[str]:
    """An unknown TMS_* variable is most likely a typo of a setting's: it is ignored, with a warning
    naming the nearest known name (not an error: the environment is shared with other programs)."""
    known = {s.env_name for s in SETTINGS} | OTHER_ENV
    warnings = []
    for name in sorted(env):
        if name.startswith("TMS_") and name not in known:
            warnings.append(f"{name}: unknown environment variable, ignored{_did_you_mean(name, known)}")
    return warnings


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _read_file(path: Path) -> dict[str, Any]:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    values: dict[str, Any] = {}
    for section, table in document.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{section}: unknown key (settings live in [sections])"
                              f"{_did_you_mean(section, SETTINGS_BY_NAME)}")
        for key, raw in table.items():
            name = f"{section}.{key}"
            setting = SETTINGS_BY_NAME.get(name)
            if setting is None:
                raise ConfigError(f"{name}: unknown key in {path}{_did_you_mean(name, SETTINGS_BY_NAME)}")
            values[name] = _coerce(setting, raw, name, from_text=False)
    return values


def sample_toml() -> str:
    """The commented sample config, generated from the table so it never drifts."""
    lines: list[str] = []
    section = None
    for s in SETTINGS:
        if s.section != section:
            section = s.section
            if not lines:
                lines.append("# TMS configuration. Every key shows its default; uncomment to change it.")
                lines.append("# Each key may also come from the environment as TMS_<SECTION>_<KEY>.")
            lines.append("")
            lines.append(f"[{section}]")
        lines.append(f"# {s.help}")
        lines.append(f"# {s.key} = {_toml_literal(s.default)}")
    return "\n".join(lines) + "\n"


def _toml_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
