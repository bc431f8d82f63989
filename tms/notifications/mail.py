"""Mail through the configured SMTP server (``[smtp]``): invitations, password resets, the inbox's
notifications and scheduled reports all go out here. Sending runs in a worker thread; without
``[smtp] host`` nothing is sent and the caller is told why."""

from __future__ import annotations

import asyncio
import logging
import smtplib
import ssl
from email.message import EmailMessage

from tms.config import Config

log = logging.getLogger(__name__)


async def send_mail(config: Config, to: str, subject: str, body: str) -> bool:
    """Mails through ``[smtp]`` in a worker thread; False when no SMTP host is set or sending failed
    (the caller still shows the link, so a mail problem never blocks an invitation)."""
    return await deliver(config, [to], subject, body) is None


async def deliver(config: Config, to: list[str], subject: str, body: str, *, html: str | None = None,
               attachments: tuple[tuple[str, str, bytes], ...] = ()) -> str | None:
    """Mails ``to`` (one message, every address in To) through ``[smtp]`` in a worker thread, with an
    optional HTML alternative and ``(filename, mime type, bytes)`` attachments; None once the server
    took it, else why not (no SMTP host set, or the server's or the network's error), for the caller
    to show."""
    host = config.get("smtp.host")
    if not host:
        return "no SMTP server is set ([smtp] host)"

    def send() -> None:  # composing too: encoding an attachment is work that grows with it
        message = EmailMessage()
        message["From"] = config.get("smtp.from") or f"tms@{host}"
        message["To"] = ", ".join(to)
        message["Subject"] = subject
        message.set_content(body)
        if html is not None:
            message.add_alternative(html, subtype="html")
        for filename, mime_type, content in attachments:
            maintype, _, subtype = mime_type.partition("/")
            message.add_attachment(content, maintype=maintype, subtype=subtype, filename=filename)
        with smtplib.SMTP(host, int(config.get("smtp.port")), timeout=15) as smtp:
            if config.get("smtp.starttls"):
                smtp.starttls(context=ssl.create_default_context())
            if config.get("smtp.username"):
                smtp.login(config.get("smtp.username"), config.get("smtp.password"))
            smtp.send_message(message)

    try:
        await asyncio.to_thread(send)
    except (OSError, smtplib.SMTPException) as exc:
        log.warning("could not mail %s through %s: %s", ", ".join(to), host, exc)
        return f"{type(exc).__name__}: {exc}"[:1000]
    return None

