// The case page's attachments: drag and drop, the file picker or a pasted screenshot upload to the
// session API (the same checks as the public API); the wiring is app.js's tmsAttachFiles, shared with
// the execution view. Loaded as a file: the CSP allows no inline script.
(() => {
  "use strict";
  const zone = document.getElementById("dropzone");
  if (!zone || !zone.dataset.uploadUrl) return;
  window.tmsAttachFiles({
    zone, url: zone.dataset.uploadUrl, list: document.getElementById("attachment-list"),
    status: document.getElementById("upload-status"), picker: document.getElementById("file-input"),
    namePrefix: "pasted",
  });
})();
