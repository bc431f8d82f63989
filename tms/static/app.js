// Progressive enhancement only: every page works without JavaScript.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source) return;
  navigator.clipboard.writeText(source.textContent.trim()).then(() => {
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1500);
  });
});
document.addEventListener("submit", (event) => {
  const message = (event.submitter && event.submitter.dataset.confirm) || event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});
// Webhook form: show the message preview of the chosen format.
document.addEventListener("change", (event) => {
  const select = event.target.closest("[data-preview-select]");
  if (!select) return;
  const form = select.closest("form");
  if (!form) return;
  form.querySelectorAll("[data-preview-format]").forEach((block) => {
    block.hidden = block.dataset.previewFormat !== select.value;
  });
});
// A header checkbox that ticks every checkbox of one name in its form (run results, case picker).
document.addEventListener("change", (event) => {
  const all = event.target.closest("[data-check-all]");
  if (!all) return;
  const form = all.closest("form");
  if (!form) return;
  form.querySelectorAll(`input[type=checkbox][name="${all.dataset.checkAll}"]`).forEach((box) => {
    box.checked = all.checked;
  });
});
// A select marked data-autosubmit submits its form when changed (inline handlers are barred by the CSP).
document.addEventListener("change", (event) => {
  if (event.target.matches("[data-autosubmit]") && event.target.form) event.target.form.submit();
});
// Case editor: insert `* shared: <name>` (a shared step, from the datalist) as a line at the caret.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-insert-shared]");
  if (!button) return;
  const input = document.getElementById(button.dataset.insertShared);
  const area = document.getElementById(button.dataset.target);
  const name = input ? input.value.trim() : "";
  if (!area || !name) return;
  const at = area.selectionStart ?? area.value.length;
  const lineStart = area.value.lastIndexOf("\n", at - 1) + 1;
  const previous = area.value.slice(0, lineStart).split("\n").slice(-2)[0] || "";
  const indent = (previous.match(/^[ \t]*/) || [""])[0] || "    ";
  const line = `${indent}* shared: ${name}\n`;
  area.value = area.value.slice(0, lineStart) + line + area.value.slice(lineStart);
  area.focus();
  area.selectionStart = area.selectionEnd = lineStart + line.length;
  input.value = "";
});

// Attachments by drag and drop, the file picker or a pasted screenshot, uploaded to the session API (the
// case page and the execution view share it): `zone` carries the upload URL; new files join `list`.
window.tmsAttachFiles = ({ zone, url, list, status, picker, namePrefix }) => {
  const csrf = () => (document.cookie.split("; ").find((c) => c.startsWith("csrftoken=")) || "").slice(10);
  const upload = async (files) => {
    if (!files.length) return;
    const body = new FormData();
    files.forEach((file, i) => body.append("file", file, file.name || `${namePrefix}-${Date.now()}-${i}.png`));
    status.textContent = `Uploading ${files.length} file${files.length > 1 ? "s" : ""}…`;
    const response = await fetch(url, { method: "POST", body, headers: { "x-csrftoken": csrf() }, credentials: "same-origin" });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) { status.textContent = `Not attached: ${answer.detail || response.statusText}`; return; }
    const empty = list.querySelector("#no-attachments");
    if (empty) empty.remove();
    answer.data.forEach((a) => {
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.href = `/web/attachments/${a.id}`;
      link.textContent = a.fileName;
      link.target = "_blank";
      link.rel = "noopener";
      item.append(link, ` (${(a.size / 1024).toFixed(1)} KB)`);
      list.append(item);
    });
    status.textContent = `Attached ${answer.data.map((a) => a.fileName).join(", ")}.`;
  };
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => { event.preventDefault(); zone.classList.remove("over"); upload(Array.from(event.dataTransfer.files)); });
  picker.addEventListener("change", (event) => { upload(Array.from(event.target.files)); event.target.value = ""; });
  document.addEventListener("paste", (event) => {
    const files = Array.from(event.clipboardData ? event.clipboardData.files : []);
    if (files.length) { event.preventDefault(); upload(files); }
  });
};
