"""AI-drafted test cases: quota, provider call, parsing, validation and the once-only save.

A generation runs in three steps so that no transaction is ever held across the network:
reserve a quota slot (a 'pending' row), ask the provider, then store the drafts (or drop the row when
the call failed, so failures never count). Drafts are kept on the row until a person has reviewed them;
saving creates DRAFT cases through the cases service in one transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, get_args

import msgspec

from tms.ai import quota as ai_quota
from tms.ai import store as ai_store
from tms.ai.parse import MAX_TITLE, MalformedAnswer, parse_answer
from tms.ai.prompt import build_messages
from tms.ai.provider import Provider, ProviderError, provider_from_config
from tms.config import Config
from tms.db import AI_QUOTA_SIGNAL, Database
from tms.errors import Conflict, DomainError, InvalidInput, NotFound
from tms.ids import iso, new_id
from tms.library.cases import service as case_service
from tms.library.cases.models import BddContent, Case, CaseCreate, Layer, Priority
from tms.library.gherkin.service import validate_gherkin
from tms.team.audit import service as audit

MAX_REQUIREMENT = 20_000
PRIORITIES: tuple[str, ...] = get_args(Priority)
LAYERS: tuple[str, ...] = get_args(Layer)
MAX_BDD = next(m.max_length for m in get_args(BddContent)[1:]
               if isinstance(m, msgspec.Meta) and m.max_length is not None)
MAX_TAGS = 100
MAX_TAG_LENGTH = 100


class QuotaExhausted(DomainError):
    status_code = 429
    title = "AI quota exhausted"

    def __init__(self, status: ai_quota.QuotaStatus) -> None:
        super().__init__(
            f"This team has used its {status.quota} AI generations for {status.month}. "
            f"The quota renews on {status.resets_at:%Y-%m-%d} 00:00 UTC."
        )
        self.status = status


class DraftsInvalid(InvalidInput):
    """Some ticked drafts cannot be saved; ``by_index`` maps a draft's index to its message."""

    def __init__(self, errors: dict[int, str]) -> None:
        count = len(errors)
        super().__init__(f"{count} ticked draft{'s' if count != 1 else ''} cannot be saved yet; fix or untick "
                         f"{'them' if count != 1 else 'it'}.", field="drafts",
                         errors=[{"field": f"drafts[{i}]", "message": m} for i, m in errors.items()])
        self.by_index = errors


@dataclass(frozen=True)
class DraftOptions:
    tags: list[str] = field(default_factory=list)
    priority: str = "MEDIUM"
    layer: str | None = None

    def as_json(self) -> str:
        return json.dumps({"tags": self.tags, "priority": self.priority, "layer": self.layer})


@dataclass(frozen=True)
class Draft:
    index: int
    title: str
    gherkin: str
    error: str | None = None
    keep: bool = True


@dataclass(frozen=True)
class Generation:
    id: str
    project_id: str | None
    project_name: str | None
    requirement: str
    options: DraftOptions
    drafts: list[Draft]
    model: str
    created_at: str
    saved_at: str | None
    saved_codes: list[str]


def parse_options(tags: str, priority: str, layer: str) -> DraftOptions:
    """The form's tags (comma separated), priority and layer, checked against the case model's values."""
    tag_list = list(dict.fromkeys(t.strip() for t in tags.split(",") if t.strip()))
    if len(tag_list) > MAX_TAGS:
        raise InvalidInput(f"At most {MAX_TAGS} tags.", field="tags")
    if any(len(t) > MAX_TAG_LENGTH for t in tag_list):
        raise InvalidInput(f"A tag has at most {MAX_TAG_LENGTH} characters.", field="tags")
    priority = priority.strip() or "MEDIUM"
    if priority not in PRIORITIES:
        raise InvalidInput(f"Priority must be one of {', '.join(PRIORITIES)}.", field="priority")
    layer = layer.strip()
    if layer and layer not in LAYERS:
        raise InvalidInput(f"Layer must be one of {', '.join(LAYERS)}.", field="layer")
    return DraftOptions(tags=tag_list, priority=priority, layer=layer or None)


def draft_error(title: str, gherkin: str) -> str | None:
    """Why a draft cannot become a case (title or Gherkin), or None when it can."""
    if not title.strip():
        return "The title must not be blank."
    if len(title.strip()) > MAX_TITLE:
        return f"The title has at most {MAX_TITLE} characters."
    if len(gherkin) > MAX_BDD:
        return f"The Gherkin has at most {MAX_BDD} characters."
    try:
        validate_gherkin(gherkin, field="This draft")
    except InvalidInput as exc:
        return exc.detail
    return None


def _hints(options: DraftOptions) -> list[str]:
    # Only fixed enumeration values go here, outside the data markers: nothing the user typed.
    hints = []
    if options.layer:
        hints.append(f"The scenarios test the {options.layer} layer.")
    if options.priority in ("HIGH", "CRITICAL"):
        hints.append("This is a high-priority area: cover error paths thoroughly.")
    return hints


async def generate(
    db: Database,
    config: Config,
    *,
    tenant_id: str,
    user_id: str | None,
    project_id: str,
    requirement: str,
    options: DraftOptions,
    provider: Provider | None = None,
    now: datetime | None = None,
) -> str:
    """Asks the model for scenarios; returns the id of the stored generation.

    Raises ``InvalidInput`` (requirement), ``ProviderError`` (disabled, unreachable, timeout, rate limit,
    HTTP error, malformed answer) or ``QuotaExhausted``; in none of those cases does the quota change,
    and with the ``none`` provider or an exhausted quota no request is sent at all.
    """
    text = requirement.strip()
    if not text:
        raise InvalidInput("Paste a user story, acceptance criteria or a bug report.", field="requirement")
    if len(text) > MAX_REQUIREMENT:
        raise InvalidInput(f"At most {MAX_REQUIREMENT} characters.", field="requirement")
    provider = provider or provider_from_config(config)
    if provider.name == "none":
        raise ProviderError("AI generation is not enabled on this server.", kind="disabled")

    moment = now or datetime.now(UTC)
    generation_id = new_id()
    quota = config.get("ai.monthly_quota")
    async with db.transaction() as tx:
        tx.after_commit(lambda: ai_quota.forget_counts(tenant_id))
        await tx.signal(AI_QUOTA_SIGNAL)
        used = await ai_quota.generations_this_month(tx, tenant_id, now=moment)
        if used >= quota:
            status = ai_quota.QuotaStatus(used, quota, ai_quota.current_month(moment),
                                          ai_quota.next_month_start(moment))
            raise QuotaExhausted(status)
        await ai_store.insert_pending(
            tx, generation_id=generation_id, tenant_id=tenant_id, project_id=project_id, user_id=user_id,
            month=ai_quota.current_month(moment), model=provider.model, requirement=text,
            options=options.as_json(), created_at=iso(moment),
        )

    try:
        answer = await provider.complete(build_messages(text, hints=_hints(options)))
        try:
            drafts = parse_answer(answer)
        except MalformedAnswer as exc:
            raise ProviderError(f"The AI answer could not be read as test scenarios: {exc}. Try again; "
                                "a larger model follows the format more reliably.", kind="malformed") from None
    except BaseException:
        # a failed (or cancelled) call is not a generation: give the quota slot back
        async with db.transaction() as tx:
            tx.after_commit(lambda: ai_quota.forget_counts(tenant_id))
            await tx.signal(AI_QUOTA_SIGNAL)
            await ai_store.delete_generation(tx, tenant_id, generation_id)
        raise

    payload = json.dumps([{"title": d.title, "gherkin": d.gherkin} for d in drafts])
    async with db.transaction() as tx:
        await ai_store.mark_done(tx, tenant_id, generation_id, len(drafts), payload)
    return generation_id


def _options_from_json(raw: str | None) -> DraftOptions:
    data: dict[str, Any] = json.loads(raw) if raw else {}
    return DraftOptions(tags=list(data.get("tags") or []), priority=data.get("priority") or "MEDIUM",
                        layer=data.get("layer"))


async def get_generation(db: Database, tenant_id: str, generation_id: str) -> Generation:
    """A finished generation of this tenant with each draft validated now (the parser is the judge)."""
    row = await ai_store.get_generation(db, tenant_id, generation_id)
    if row is None or row["status"] != "done":
        raise NotFound(f"AI generation {generation_id} not found")
    raw_drafts = json.loads(row["drafts_json"] or "[]")
    drafts = [
        Draft(index=i, title=d["title"], gherkin=d["gherkin"], error=draft_error(d["title"], d["gherkin"]))
        for i, d in enumerate(raw_drafts)
    ]
    # a draft that does not parse starts unticked: saving it must be a deliberate fix, never a default
    drafts = [Draft(d.index, d.title, d.gherkin, d.error, keep=d.error is None) for d in drafts]
    return Generation(
        id=row["id"], project_id=row["project_id"], project_name=row["project_name"],
        requirement=row["requirement"] or "", options=_options_from_json(row["options"]), drafts=drafts,
        model=row["model"], created_at=row["created_at"], saved_at=row["saved_at"],
        saved_codes=json.loads(row["saved_codes"] or "[]"),
    )


async def recent_generations(db: Database, tenant_id: str, limit: int = 10) -> list[dict[str, Any]]:
    return await ai_store.recent_generations(db, tenant_id, limit)


def check_drafts(drafts: list[Draft]) -> list[Draft]:
    """The drafts with their current validation message (after the user's edits)."""
    return [Draft(d.index, d.title, d.gherkin, draft_error(d.title, d.gherkin), d.keep) for d in drafts]


async def save_drafts(
    db: Database, tenant_id: str, generation_id: str, drafts: list[Draft], options: DraftOptions
) -> list[Case]:
    """Saves the ticked drafts as DRAFT cases of the generation's project, all or none, once.

    Every ticked draft is validated again here: what the browser sent is what gets checked, whatever
    the page showed before the user edited it.
    """
    generation = await get_generation(db, tenant_id, generation_id)
    if generation.saved_at is not None:
        raise Conflict("These drafts have already been saved"
                       + (f" as {', '.join(generation.saved_codes)}." if generation.saved_codes else "."))
    kept = [d for d in drafts if d.keep]
    if not kept:
        raise InvalidInput("Tick at least one draft to save.", field="drafts")
    errors = {d.index: message for d in kept if (message := draft_error(d.title, d.gherkin))}
    if errors:
        raise DraftsInvalid(errors)
    if generation.project_id is None:
        raise InvalidInput("The project of these drafts no longer exists; generate them again in the active "
                           "project.", field="drafts")
    bodies = []
    for d in kept:
        try:
            bodies.append(msgspec.convert({
                "title": d.title.strip(), "bdd_content": d.gherkin, "project_id": generation.project_id,
                "status": "DRAFT", "priority": options.priority, "layer": options.layer, "tags": options.tags,
            }, CaseCreate))
        except msgspec.ValidationError as exc:
            raise InvalidInput(f"Draft {d.index + 1}: {exc}", field="drafts") from None

    saved_at = iso(datetime.now(UTC))
    async with db.transaction() as tx:
        if not await ai_store.claim_save(tx, tenant_id, generation_id, saved_at):
            raise Conflict("These drafts have already been saved.")
    try:
        created = await case_service.create_cases(db, tenant_id, bodies, drafted=True)
    except BaseException:
        async with db.transaction() as tx:
            await ai_store.release_save(tx, tenant_id, generation_id)
        raise
    async with db.transaction() as tx:
        await ai_store.set_saved_codes(tx, tenant_id, generation_id, json.dumps([c.code for c in created]))
        await audit.record(tx, tenant_id, "ai_generation.saved", "ai_generation", generation_id,
                           {"saved": len(created), "codes": [c.code for c in created]})
    return created
