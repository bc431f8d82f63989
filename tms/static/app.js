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
