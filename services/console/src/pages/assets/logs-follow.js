// Logs page: "Follow new entries as they come". Asks the page itself for the entries after the
// cursor it was rendered with (same filters), every two seconds while the box is ticked, and
// appends them as text (never as markup). Served as the console's own file: the
// Content-Security-Policy allows no inline script.
(function () {
  "use strict";
  var box = document.getElementById("follow");
  var table = document.getElementById("log-entries");
  var state = document.getElementById("follow-state");
  if (!box || !table) return;
  var body = table.tBodies[0];
  var next = box.getAttribute("data-next") || "";
  var timer = null;
  var MAX_ROWS = 2000;

  function cell(row, text, code) {
    var td = document.createElement("td");
    if (code) {
      var c = document.createElement("code");
      c.textContent = text;
      td.appendChild(c);
    } else td.textContent = text;
    row.appendChild(td);
  }

  function append(r) {
    var tr = document.createElement("tr");
    tr.className = "level-" + String(r.level).toLowerCase();
    cell(tr, r.time);
    cell(tr, r.level);
    cell(tr, r.service);
    cell(tr, r.node, true);
    cell(tr, r.msg);
    cell(tr, r.fields, true);
    body.appendChild(tr);
    while (body.rows.length > MAX_ROWS) body.deleteRow(0);
  }

  function poll() {
    var q = new URLSearchParams(window.location.search);
    q.set("format", "json");
    q.set("after", next);
    fetch("/ui/logs?" + q.toString(), { credentials: "same-origin", headers: { accept: "application/json" } })
      .then(function (res) {
        if (!res.ok) throw new Error("HTTP " + res.status);
        return res.json();
      })
      .then(function (page) {
        (page.rows || []).forEach(append);
        if (page.next) next = page.next;
        var none = document.getElementById("no-entries");
        if (none && body.rows.length > 0) none.remove();
        state.textContent = "Following: " + (page.rows || []).length + " new at " + new Date().toLocaleTimeString();
      })
      .catch(function (err) {
        state.textContent = "Could not fetch new entries (" + err.message + "); still trying.";
      })
      .then(function () {
        if (box.checked) timer = setTimeout(poll, 2000);
      });
  }

  box.addEventListener("change", function () {
    clearTimeout(timer);
    if (box.checked) poll();
    else state.textContent = "Not following.";
  });
})();
