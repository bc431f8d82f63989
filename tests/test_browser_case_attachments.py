"""The case page's attachments in a real browser (issue 26): a pasted screenshot, a dropped file and
the file picker each upload through static/case_files.js (no inline script: the CSP forbids it), and
the list shows them without a reload; each one's Delete button asks, then deletes it."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.browser_support import browser, shot  # noqa: F401 (fixtures)
from tests.conftest import ServerProcess, make_tenant_on
from tests.test_browser import png
from tests.test_browser_team import _context, _sign_in

_FILE_EVENT = """([data, name, kind]) => {
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], name, { type: "image/png" }));
    if (kind === "paste") {
        document.dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer }));
    } else {
        const zone = document.getElementById("dropzone");
        zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: transfer, bubbles: true, cancelable: true }));
        zone.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }
}"""


def test_paste_drop_and_pick_files_on_the_case_page(server: ServerProcess, browser: Any, tmp_path: Path) -> None:  # noqa: F811
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API runs an event loop in this thread
        tenant = pool.submit(make_tenant_on, server, "Browser case files").result()
    case = tenant.api.post("/api/v1/cases", json={"title": "Checkout spec",
                                                  "bdd_content": "Feature: F\n  Scenario: S\n    Given x\n"})
    assert case.status_code == 201, case.text
    code = case.json()["data"]["code"]
    context, page = _context(browser)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    try:
        _sign_in(page, server.url, tenant.email, tenant.password)
        page.goto(f"{server.url}/cases/{code}")
        assert page.locator("#no-attachments").is_visible()
        data = base64.b64encode(png()).decode()
        page.evaluate(_FILE_EVENT, [data, "pasted.png", "paste"])
        page.locator("#upload-status", has_text="Attached pasted.png").wait_for()
        page.evaluate(_FILE_EVENT, [data, "dropped mock-up.png", "drop"])
        page.locator("#upload-status", has_text="Attached dropped mock-up.png").wait_for()
        picked = tmp_path / "picked.png"
        picked.write_bytes(png(40, 30))
        page.locator("#file-input").set_input_files(str(picked))
        page.locator("#upload-status", has_text="Attached picked.png").wait_for()
        names = page.locator("#attachment-list li a").all_inner_texts()
        assert names == ["pasted.png", "dropped mock-up.png", "picked.png"]
        expect(page.locator("#no-attachments")).to_have_count(0)
        shot(page, "case-attachments")
        # a refused file is named with the service's reason, and nothing is listed
        page.evaluate(_FILE_EVENT, [base64.b64encode(b"MZ\x90\x00" + bytes(64)).decode(), "tool.png", "paste"])
        page.locator("#upload-status", has_text="Not attached").wait_for()
        expect(page.locator("#attachment-list li")).to_have_count(3)
        # after a reload each has a Delete button; it asks first, then the page comes back without it
        page.reload()
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name="Delete dropped mock-up.png").click()
        page.wait_for_load_state()
        page.locator(".flash", has_text="Attachment deleted.").wait_for()
        assert page.locator("#attachment-list li a").all_inner_texts() == ["pasted.png", "picked.png"]
    finally:
        context.close()
    listed = tenant.api.get(f"/api/v1/cases/{code}/attachments").json()["data"]
    assert [a["fileName"] for a in listed] == ["pasted.png", "picked.png"]
    assert not [e for e in errors if "Content Security Policy" in e]
