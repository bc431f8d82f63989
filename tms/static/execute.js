// The execution view: keyboard walk through the steps, a running timer, the status suggested from
// the steps, and attachments by drag and drop, file picker or a pasted screenshot. Loaded as a file
// (no inline script), so it works under a strict Content-Security-Policy.
(() => {
  const form = document.getElementById("execute-form");
  if (!form) return;
  const steps = Array.from(form.querySelectorAll("li.step"));
  const dialog = document.getElementById("shortcuts");
  const durationInput = document.getElementById("f-duration");
  const timerOut = document.getElementById("timer");
  const timerToggle = document.getElementById("timer-toggle");
  const suggested = document.getElementById("suggested");
  let current = 0;
  let statusTouched = false;

  // --- steps -------------------------------------------------------------------------------------
  const focusStep = (index) => {
    if (!steps.length) return;
    current = Math.max(0, Math.min(steps.length - 1, index));
    steps.forEach((step, i) => step.classList.toggle("current", i === current));
    steps[current].focus({ preventScroll: false });
    steps[current].scrollIntoView({ block: "nearest" });
  };
  const firstUnmarked = () => {
    const i = steps.findIndex((step) => !step.querySelector("input[type=radio]:checked:not([value=''])"));
    return i === -1 ? 0 : i;
  };
  const markStep = (value) => {
    if (!steps.length) return;
    const radio = steps[current].querySelector(`input[type=radio][value="${value}"]`);
    if (!radio) return;
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
    if (current < steps.length - 1) focusStep(current + 1);
  };
  const suggest = () => {
    const marks = steps.map((step) => {
      const checked = step.querySelector("input[type=radio]:checked");
      return checked ? checked.value : "";
    });
    steps.forEach((step, i) => {
      step.className = step.className.replace(/\bstep-[A-Z]+\b/g, "").trim();
      if (marks[i]) step.classList.add(`step-${marks[i]}`);
    });
    if (!marks.length) return;
    let status = "UNKNOWN";
    if (marks.includes("FAILED")) status = "FAILED";
    else if (marks.includes("BROKEN")) status = "BROKEN";
    else if (marks.every((m) => m === "SKIPPED")) status = "SKIPPED";
    else if (marks.every((m) => m)) status = "PASSED";
    suggested.textContent = status === "UNKNOWN" ? "" : `(suggested from the steps: ${status === "BROKEN" ? "blocked" : status.toLowerCase()})`;
    if (!statusTouched && status !== "UNKNOWN") {
      const radio = form.querySelector(`input[name=status][value="${status}"]`);
      if (radio) radio.checked = true;
    }
  };
  form.addEventListener("change", (event) => {
    if (event.target.name === "status" && event.isTrusted) statusTouched = true;
    if (event.target.name && event.target.name.startsWith("step_")) suggest();
  });
  steps.forEach((step, i) => step.addEventListener("click", () => { current = i; steps.forEach((s, j) => s.classList.toggle("current", j === i)); }));

  // --- timer -------------------------------------------------------------------------------------
  // the duration as typed and read: "1m 30s" (tms/runs/executions/durations.py parses it on save)
  const toMs = (text) => {
    const raw = text.trim();
    if (/^\d+(\.\d+)?$/.test(raw)) return Math.round(parseFloat(raw) * 1000);
    const clock = raw.match(/^(?:(\d+):)?(\d+):(\d{1,2}(?:\.\d+)?)$/);
    if (clock) return Math.round(((parseInt(clock[1] || "0", 10) * 60 + parseInt(clock[2], 10)) * 60 + parseFloat(clock[3])) * 1000);
    const units = { h: 3600000, m: 60000, min: 60000, s: 1000, sec: 1000, ms: 1 };
    let total = 0;
    for (const [, n, unit] of raw.matchAll(/(\d+(?:\.\d+)?)\s*(ms|min|sec|h|m|s)/gi)) total += parseFloat(n) * units[unit.toLowerCase()];
    return Math.round(total);
  };
  const toWords = (ms) => {
    const s = ms > 0 ? Math.max(1, Math.round(ms / 1000)) : 0;  // a started timer never reads "0s"
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), rest = s % 60;
    const parts = [];
    if (h) parts.push(`${h}h`);
    if (m) parts.push(`${m}m`);
    if (rest || !parts.length) parts.push(`${rest}s`);
    return parts.join(" ");
  };
  let elapsed = toMs(durationInput.value);
  let running = true;
  let last = Date.now();
  const show = () => {
    const seconds = Math.floor(elapsed / 1000);
    timerOut.textContent = `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
  };
  const tick = () => {
    const now = Date.now();
    if (running) {
      elapsed += now - last;
      // never under the tester's caret: the field being typed in keeps what they type
      if (document.activeElement !== durationInput) durationInput.value = toWords(elapsed);
    }
    last = now;
    show();
  };
  const toggleTimer = () => {
    tick();
    running = !running;
    timerToggle.firstChild.textContent = running ? "Pause " : "Resume ";
  };
  durationInput.addEventListener("change", () => { elapsed = toMs(durationInput.value); show(); });
  durationInput.addEventListener("focus", () => { if (running) toggleTimer(); });
  timerToggle.addEventListener("click", toggleTimer);
  setInterval(tick, 1000);
  show();

  // --- keyboard ----------------------------------------------------------------------------------
  const submit = (next) => {
    tick();
    const button = form.querySelector(next ? "button[name=next]" : "button[type=submit]:not([name])");
    if (button) form.requestSubmit(button);
  };
  const typing = (el) => el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
    (el.tagName === "INPUT" && !["radio", "checkbox", "button", "submit"].includes(el.type)));
  document.addEventListener("keydown", (event) => {
    if (event.target.closest && event.target.closest(".comment-form")) return;  // a comment's own keys
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") { event.preventDefault(); submit(true); return; }
    if ((event.ctrlKey || event.metaKey) && (event.key === "s" || event.key === "S")) { event.preventDefault(); submit(false); return; }
    if (event.key === "Escape") {
      if (typing(document.activeElement)) { document.activeElement.blur(); focusStep(current); }
      return;
    }
    if (typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    const byLetter = { p: "PASSED", f: "FAILED", b: "BROKEN", s: "SKIPPED" };
    if (key === "?") { event.preventDefault(); if (dialog.open) dialog.close(); else dialog.showModal(); return; }
    if (key === "j" || key === "ArrowDown") { event.preventDefault(); focusStep(current + 1); return; }
    if (key === "k" || key === "ArrowUp") { event.preventDefault(); focusStep(current - 1); return; }
    if (byLetter[key]) { event.preventDefault(); markStep(byLetter[key]); return; }
    if (event.shiftKey && byLetter[key.toLowerCase()]) {
      event.preventDefault();
      const radio = form.querySelector(`input[name=status][value="${byLetter[key.toLowerCase()]}"]`);
      if (radio) { radio.checked = true; statusTouched = true; }
      return;
    }
    if (key === "n" && steps.length) { event.preventDefault(); steps[current].querySelector(".step-note").focus(); return; }
    if (key === "c") { event.preventDefault(); document.getElementById("f-comment").focus(); return; }
    if (key === "g") { event.preventDefault(); document.getElementById("f-bug_ticket_key").focus(); return; }
    if (key === "t") { event.preventDefault(); toggleTimer(); }
  });
  document.querySelectorAll("[data-shortcuts-open]").forEach((b) => b.addEventListener("click", () => dialog.showModal()));

  // --- attachments (app.js's tmsAttachFiles, shared with the case page) ---------------------------
  const zone = document.getElementById("dropzone");
  if (zone) {
    window.tmsAttachFiles({
      zone, url: form.dataset.uploadUrl, list: document.getElementById("attachment-list"),
      status: document.getElementById("upload-status"), picker: document.getElementById("file-input"),
      namePrefix: "screenshot",
    });
  }

  suggest();
  focusStep(firstUnmarked());
})();
