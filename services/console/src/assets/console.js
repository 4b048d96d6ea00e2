// The console's one script of its own: progressive enhancement only (every page works without it).
"use strict";

// Copy buttons: `data-copy` names the element whose text is copied (an id, a key, a reference).
document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("button[data-copy]") : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute("data-copy") || "");
  if (!source) return;
  const text = source.textContent || "";
  const done = (message) => {
    button.setAttribute("data-state", message);
    const status = button.parentElement && button.parentElement.querySelector(".copy-status");
    if (status) status.textContent = message;
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(() => done("Copied"), () => done("Select the text and copy it"));
  } else {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    if (selection) {
      selection.removeAllRanges();
      selection.addRange(range);
    }
    done(document.execCommand && document.execCommand("copy") ? "Copied" : "Selected: press Ctrl+C to copy");
  }
});
