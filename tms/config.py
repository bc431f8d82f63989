"""Settings: one table of every option, read from tms.toml and then from TMS_<SECTION>_<KEY> env vars.

The table drives loading, validation, the sample `tms.toml` and a test that keeps the docs honest.
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
from typing import Any, Literal, overload


class ConfigError(Exception):
    """A configuration problem, reported as one line naming the offending key."""


@dataclass(frozen=True)
class Setting:
    section: str
    key: str
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        return f"{self.section}.{self.key}"

    @property
    def env_name(self) -> str:
        return f"TMS_{self.section.upper()}_{self.key.upper()}"


SETTINGS: tuple[Setting, ...] = (
    Setting("server", "host", "127.0.0.1", "Address to listen on."),
    Setting("server", "port", 8080, "TCP port to listen on (0: any free port).", minimum=0, maximum=65535),
    Setting(
        "server",
        "base_url",
        "http://127.0.0.1:8080",
        "Public address of the service; an https base_url marks production "
        "(Secure cookies, HTTPS-only webhooks).",
    ),
    Setting(
        "server",
        "metrics_token",
        "",
        "Bearer token that lets non-loopback clients read /metrics (loopback needs none; empty = loopback only).",
    ),
    Setting("storage", "data_dir", "data", "Directory holding tms.db (SQLite, WAL) and attachments/."),
    Setting(
        "storage",
        "database_url",
        "",
        "Empty: SQLite in data_dir. postgresql://user:pass@host:port/db: PostgreSQL 15+, which several "
        "tms serve replicas may share (with attachments.store = s3 they share no disk).",
    ),
    Setting(
        "attachments",
        "max_bytes",
        10_485_760,
        "Largest accepted attachment file in bytes; the env setting ATTACHMENT_MAX_BYTES overrides it.",
        minimum=1,
        maximum=2**40,
    ),
    Setting("attachments", "store", "local", "Where attachment files live: local (data_dir/attachments) or s3 "
            "(an S3-compatible bucket, so replicas share no disk; see docs/deployment.md).",
            choices=("local", "s3")),
    Setting("attachments", "s3_endpoint", "", "S3 endpoint URL, e.g. http://minio:9000 or "
            "https://<account>.r2.cloudflarestorage.com; empty = AWS S3 of s3_region."),
    Setting("attachments", "s3_bucket", "", "Bucket holding the attachments (it must exist)."),
    Setting("attachments", "s3_prefix", "tms", "Key prefix inside the bucket; objects are <prefix>/<tenant>/<sha256>."),
    Setting("attachments", "s3_region", "us-east-1", "Region of the bucket (S3-compatible stores: whatever they "
            "expect, often us-east-1 or auto)."),
    Setting("attachments", "s3_access_key_id", "", "Access key id; empty = the AWS_* environment or the "
            "instance's role."),
    Setting("attachments", "s3_secret_access_key", "", "Secret access key (never shown or logged)."),
    Setting("attachments", "s3_presigned_seconds", 0, "With store = s3 and static keys: API and web downloads "
            "answer 302 to a presigned URL valid this many seconds; 0 = the service streams every download.",
            minimum=0, maximum=7 * 24 * 3600),
    Setting(
        "retention",
        "unlinked_days",
        30,
        "Unlinked ingested results (naming no library case) older than this many days are swept; 0 = next sweep.",
        minimum=0,
        maximum=36_500,
    ),
    Setting(
        "retention",
        "runs_days",
        0,
        "Whole runs (results and attachment files included) older than this many days are removed by the "
        "daily sweep; 0 = keep every run.",
        minimum=0,
        maximum=36_500,
    ),
    Setting("notifications", "read_days", 90, "Read notifications older than this many days are removed by the "
            "daily sweep; 0 = keep them.", minimum=0, maximum=36_500),
    Setting("notifications", "keep_days", 365, "Every notification, read or not, older than this many days is "
            "removed by the daily sweep; 0 = keep them.", minimum=0, maximum=36_500),
    Setting("webhooks", "timeout_seconds", 10.0, "Timeout of one delivery attempt, in seconds.", minimum=0.001,
            maximum=3600),
    Setting(
        "webhooks",
        "backoff_seconds",
        30.0,
        "Delay before retry n = backoff_seconds * backoff_factor**(n-1), plus up to 10% jitter.",
        minimum=0,
        maximum=7 * 24 * 3600,
    ),
    Setting("webhooks", "backoff_factor", 4.0, "Growth factor of the retry delay.", minimum=1, maximum=100),
    Setting("webhooks", "max_retries", 3, "Retries after the first attempt before a delivery fails.", minimum=0,
            maximum=100),
    Setting(
        "webhooks",
        "allow_private_targets",
        False,
        "Allow webhook targets on loopback, private or link-local addresses (refused by default).",
    ),
    Setting("ai", "provider", "none", "AI provider: none, or openai (any OpenAI-compatible server).",
            choices=("none", "openai")),
    Setting("ai", "model", "", "Model name sent to the AI provider."),
    Setting("ai", "base_url", "", "Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1."),
    Setting("ai", "api_key", "", "API key of the AI provider (never shown or logged)."),
    Setting("ai", "monthly_quota", 100, "Successful AI generations per tenant per calendar month.", minimum=0,
            maximum=10**9),
    Setting("ai", "timeout_seconds", 60.0, "Timeout of one request to the AI provider, in seconds.", minimum=0.001,
            maximum=3600),
    Setting("flaky", "threshold", 0.3, "Flip rate (0-1) at which a case becomes FLAKY; below half of it, it is "
            "stable again (AUTOMATED).", minimum=0.01, maximum=1),
    Setting("flaky", "runs", 30, "How many of a project's last runs flaky detection looks at.", minimum=2,
            maximum=200),
    Setting("smtp", "host", "", "SMTP server that mails invitation links; empty = no mail (the link is shown "
            "to the admin to hand over)."),
    Setting("smtp", "port", 587, "SMTP port.", minimum=1, maximum=65535),
    Setting("smtp", "username", "", "SMTP user name; empty = no login."),
    Setting("smtp", "password", "", "SMTP password (never shown or logged)."),
    Setting("smtp", "from", "", "Sender address of the mails, e.g. tms@example.com."),
    Setting("smtp", "starttls", True, "Upgrade the SMTP connection with STARTTLS."),
    Setting("reports", "schedule_poll_seconds", 30, "How often each replica looks for report schedules that are "
            "due (one replica mails each occurrence).", minimum=1, maximum=3600),
    Setting("auth", "password_login", True, "Sign-in with email and password; false leaves the other methods "
            "(single sign-on) and the owner's password, as the way back in when they fail."),
    Setting("auth", "session_days", 14, "A web session ends after this many days without use (its expiry slides "
            "at most once a day).", minimum=1, maximum=3650),
    Setting("auth", "session_idle_minutes", 0, "A web session unused for this many minutes ends (to within 5 "
            "minutes: last use is recorded every 5); 0 = no idle timeout.", minimum=0, maximum=525_600),
    Setting("auth", "login_failures_per_client", 20, "Failed sign-ins from one client address (any accounts) "
            "within 15 minutes before that address waits; raise it when many users share one address (a NAT "
            "or a proxy).", minimum=1, maximum=1_000_000),
    Setting("auth", "secret_key", "", "Key that encrypts secrets at rest (TOTP seeds); empty = one generated "
            "into data_dir/secret.key (SQLite only: required with PostgreSQL). Same value on every replica; "
            "back it up apart from the database (never shown or logged)."),
)

SETTINGS_BY_NAME = {s.name: s for s in SETTINGS}
EXTRA_ENV = {"ATTACHMENT_MAX_BYTES": "attachments.max_bytes"}
# TMS_* variables that are not settings but are read elsewhere (config file, the reporter, tests)
OTHER_ENV = frozenset({"TMS_CONFIG", "TMS_URL", "TMS_TOKEN", "TMS_PROJECT", "TMS_SCREENSHOTS"})



# The settings by the type of their value, so that ``Config.get`` returns that type to the type checker
# (a new setting is added to its group; tests/test_config_cli.py checks the groups match SETTINGS).
TextSetting = Literal[
    "server.host",
    "server.base_url",
    "server.metrics_token",
    "storage.data_dir",
    "storage.database_url",
    "attachments.store",
    "attachments.s3_endpoint",
    "attachments.s3_bucket",
    "attachments.s3_prefix",
    "attachments.s3_region",
    "attachments.s3_access_key_id",
    "attachments.s3_secret_access_key",
    "ai.provider",
    "ai.model",
    "ai.base_url",
    "ai.api_key",
    "smtp.host",
    "smtp.username",
    "smtp.password",
    "smtp.from",
    "auth.secret_key",
]

NumberSetting = Literal[
    "server.port",
    "attachments.max_bytes",
    "attachments.s3_presigned_seconds",
    "retention.unlinked_days",
    "retention.runs_days",
    "notifications.read_days",
    "notifications.keep_days",
    "webhooks.max_retries",
    "ai.monthly_quota",
    "flaky.runs",
    "smtp.port",
    "auth.session_days",
    "auth.session_idle_minutes",
    "auth.login_failures_per_client",
    "reports.schedule_poll_seconds",
]

DecimalSetting = Literal[
    "webhooks.timeout_seconds",
    "webhooks.backoff_seconds",
    "webhooks.backoff_factor",
    "ai.timeout_seconds",
    "flaky.threshold",
]

FlagSetting = Literal[
    "webhooks.allow_private_targets",
    "smtp.starttls",
    "auth.password_login",
]

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
