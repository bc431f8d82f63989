// The case page's attachments: drag and drop, the file picker or a pasted screenshot upload to the
// session API (the same checks as the public API). Loaded as a file: the CSP allows no inline script.
(() => {
  "use strict";
  const zone = document.getElementById("dropzone");
  if (!zone || !zone.dataset.uploadUrl) return;
  const list = document.getElementById("attachment-list");
  const status = document.getElementById("upload-status");
  const csrf = () => (document.cookie.split("; ").find((c) => c.startsWith("csrftoken=")) || "").slice(10);
  const upload = async (files) => {
    if (!files.length) return;
    const body = new FormData();
    files.forEach((file, i) => body.append("file", file, file.name || `pasted-${Date.now()}-${i}.png`));
    status.textContent = `Uploading ${files.length} file${files.length > 1 ? "s" : ""}…`;
    const response = await fetch(zone.dataset.uploadUrl, { method: "POST", body, headers: { "x-csrftoken": csrf() }, credentials: "same-origin" });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) { status.textContent = `Not attached: ${answer.detail || response.statusText}`; return; }
    const empty = document.getElementById("no-attachments");
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
  document.getElementById("file-input").addEventListener("change", (event) => { upload(Array.from(event.target.files)); event.target.value = ""; });
  document.addEventListener("paste", (event) => {
    const files = Array.from(event.clipboardData ? event.clipboardData.files : []);
    if (files.length) { event.preventDefault(); upload(files); }
  });
})();
