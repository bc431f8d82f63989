"""Every setting TMS reads, in one table: section, key, default, help and bounds.

The table drives loading and validation (``tms.config``), the sample `tms.toml`, the settings reference
and a test that keeps the docs honest. A new setting is a row here and a name in its type group below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


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
