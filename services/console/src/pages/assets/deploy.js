// Deploy on a repository's page: PUTs the chosen file to /repository/<repo>/<path>, the route a
// client uploads through, as the signed-in person. The gateway accepts a write by session cookie
// only with svc.ui.deploy on and the session's anti-forgery token in x-svc-csrf.
(() => {
  "use strict";
  const form = document.getElementById("deploy-form");
  if (!form) return;
  const result = document.getElementById("deploy-result");
  const fileInput = document.getElementById("deploy-file");
  const pathInput = document.getElementById("deploy-path");
  const token = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content") ?? "";
  const repository = form.getAttribute("data-repository");

  // A chosen file suggests its own name as the path, until the path is typed.
  fileInput.addEventListener("change", () => {
    const file = fileInput.files && fileInput.files[0];
    if (file && !pathInput.value) pathInput.value = file.name;
  });

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const file = fileInput.files && fileInput.files[0];
    if (!file) return;
    const path = (pathInput.value.trim() || file.name).replace(/^\/+/, "");
    const url = `/repository/${encodeURIComponent(repository)}/${path.split("/").map(encodeURIComponent).join("/")}`;
    result.textContent = `Uploading ${file.name} (${file.size} bytes)…`;
    try {
      const res = await fetch(url, {
        method: "PUT",
        body: file,
        credentials: "same-origin",
        headers: { "x-svc-csrf": token, "service-repository-name": repository, "content-type": file.type || "application/octet-stream" },
      });
      const body = await res.json().catch(() => null);
      if (res.ok) {
        result.textContent = `Deployed ${body?.path ?? path} (${body?.size ?? file.size} bytes, SHA-256 ${body?.sha256 ?? "?"}): HTTP ${res.status}.`;
      } else {
        result.textContent = `Not deployed: HTTP ${res.status}: ${(body && (body.detail || body.title)) || res.statusText}`;
      }
    } catch (err) {
      result.textContent = `Not deployed: ${err.message}`;
    }
  });
})();
