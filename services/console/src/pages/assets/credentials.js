// The Credentials page's script: copy buttons, and the "managing key pasted into the page" mode.
// The pasted key lives in the `managingKey` variable of this closure only: never written to
// storage, a cookie, the URL or the console, never logged; it goes to /api/credentials in the
// Service-Repository-Key header, with the session cookie left out so the key alone decides.
(() => {
  "use strict";

  const copied = (id, text) => {
    const status = document.querySelector(`[data-copied-for="${id}"]`);
    if (status) status.textContent = text;
  };
  const copyFrom = async (id) => {
    const input = document.getElementById(id);
    if (!input) return;
    try {
      await navigator.clipboard.writeText(input.value);
      copied(id, "Copied");
    } catch {
      // Without clipboard access (plain http, an old browser): select it for Ctrl+C.
      input.select();
      copied(id, "Selected: press Ctrl+C to copy");
    }
  };
  document.addEventListener("click", (e) => {
    const button = e.target instanceof Element ? e.target.closest("button[data-copy]") : null;
    if (button) copyFrom(button.getAttribute("data-copy"));
  });

  const form = document.getElementById("managing-key-form");
  const mode = document.getElementById("key-mode");
  if (!form || !mode) return;
  const input = document.getElementById("managing-key");
  const status = document.getElementById("key-mode-status");
  const tbody = document.querySelector("#key-mode-list tbody");
  const nextButton = document.getElementById("key-mode-next");
  const issueForm = document.getElementById("key-mode-issue");
  let managingKey = null;
  let cursor = null;

  const call = async (method, path, body) => {
    const headers = { "service-repository-key": managingKey };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "omit", cache: "no-store" });
    let data = null;
    if (res.status !== 204) data = await res.json().catch(() => null);
    if (!res.ok) throw new Error((data && (data.detail || data.title)) || `HTTP ${res.status}`);
    return { data, next: res.headers.get("x-next-cursor") };
  };

  const cell = (text) => {
    const td = document.createElement("td");
    td.textContent = text;
    return td;
  };
  const when = (iso) => (iso ? `${iso.slice(0, 16).replace("T", " ")} UTC` : "never");

  const row = (c) => {
    const tr = document.createElement("tr");
    tr.append(cell(c.label || "no label"), cell(c.id.slice(0, 12)), cell(when(c.expires) + (c.expiringSoon ? " (expires within 14 days)" : "")), cell(c.state));
    const td = document.createElement("td");
    if (c.state !== "revoked") {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = "Revoke";
      b.setAttribute("aria-label", `Revoke key ${c.id.slice(0, 12)}`);
      b.addEventListener("click", () => {
        // As the server-rendered list's confirmation page: name the key, warn loudly for the bootstrap key.
        const name = c.label ? `"${c.label}"` : `${c.id.slice(0, 12)} (no label)`;
        const warning = c.bootstrap ? "\n\nTHIS IS THE BOOTSTRAP KEY: it holds every right on every repository, and whatever still uses it stops working at once." : "";
        if (window.confirm(`Revoke the key ${name}? Every request made with it is refused from now on.${warning}`)) revoke(c.id);
      });
      td.append(b);
    }
    tr.append(td);
    return tr;
  };

  const load = async (after) => {
    const q = new URLSearchParams({ limit: "50" });
    if (after) q.set("after", after);
    const { data, next } = await call("GET", `/api/credentials?${q}`);
    if (!after) tbody.replaceChildren();
    for (const c of data) tbody.append(row(c));
    cursor = next;
    nextButton.hidden = !next;
  };

  const say = (text) => {
    status.textContent = text;
  };
  const attempt = async (what, fn) => {
    try {
      await fn();
    } catch (err) {
      say(`${what}: ${err.message}`);
    }
  };

  const revoke = (id) =>
    attempt("Revoking failed", async () => {
      await call("DELETE", `/api/credentials/${id}`);
      await load(null);
      say(`Key ${id.slice(0, 12)} revoked with the managing key.`);
    });

  const secretBox = (key) => {
    let box = document.getElementById("key-mode-secret");
    if (!box) {
      box = document.createElement("p");
      box.className = "field";
      box.innerHTML =
        '<label for="key-mode-secret-value">New key (shown once)</label> <input id="key-mode-secret-value" type="text" readonly size="70"> ' +
        '<button type="button" data-copy="key-mode-secret-value">Copy</button> <span role="status" data-copied-for="key-mode-secret-value"></span>';
      box.id = "key-mode-secret";
      issueForm.after(box);
    }
    box.querySelector("input").value = key;
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    managingKey = input.value.trim();
    input.value = "";
    attempt("The managing key was refused", async () => {
      await load(null);
      mode.hidden = false;
      say("Using the pasted managing key.");
    });
  });

  issueForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const label = document.getElementById("key-mode-label").value.trim();
    attempt("Issuing failed", async () => {
      const { data } = await call("POST", "/api/credentials", label ? { label } : {});
      secretBox(data.key);
      await load(null);
      say(`Key ${data.id.slice(0, 12)} issued with the managing key: copy it now, it is shown once.`);
    });
  });

  nextButton.addEventListener("click", () => attempt("Loading failed", () => load(cursor)));

  document.getElementById("key-mode-forget").addEventListener("click", () => {
    managingKey = null;
    cursor = null;
    tbody.replaceChildren();
    document.getElementById("key-mode-secret")?.remove();
    mode.hidden = true;
  });
})();
