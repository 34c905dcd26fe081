// Herald dashboard: refresh the live part of the page while it is open, so a circuit
// opening or a replay landing shows without a reload. No other script runs on the page.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live) { return; }
  var every = parseInt(live.getAttribute("data-refresh") || "0", 10);
  if (!every) { return; }
  function tick() {
    var u = new URL(window.location.href);
    u.searchParams.set("fragment", "live");
    fetch(u.toString(), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) {
        if (r.status === 401) { window.location.reload(); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html !== null) {
          live.innerHTML = html;
          live.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () { /* try again at the next tick */ })
      .then(function () { window.setTimeout(tick, every); });
  }
  window.setTimeout(tick, every);
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) { e.preventDefault(); }
  });
})();
