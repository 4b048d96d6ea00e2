// An export's (or an import's) view while it runs: reloads the page every second until the server says it ended
// (the page then comes without this script).
(() => {
  "use strict";
  const state = document.getElementById("export-state") || document.getElementById("import-state");
  if (!state || state.getAttribute("data-state") !== "running") return;
  setTimeout(() => location.reload(), 1000);
})();
