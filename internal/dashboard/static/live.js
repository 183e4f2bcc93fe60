// Live updates: the server sends an event when a DRPlacementControl or a DRCluster changes;
// the page then fetches its live part once and swaps it in. No timer polls the server.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var status = document.getElementById("live-state");
  if (!live || !window.EventSource) { return; }
  var pending = null;
  function refresh() {
    pending = null;
    fetch(window.location.pathname + window.location.search, { headers: { "X-Live-Part": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var focused = document.activeElement && live.contains(document.activeElement) ? document.activeElement.getAttribute("href") : null;
        live.innerHTML = html;
        if (focused) {
          var again = live.querySelector('a[href="' + focused.replace(/"/g, '\\"') + '"]');
          if (again) { again.focus(); }
        }
        if (status) { status.textContent = "· live, updated " + new Date().toISOString().substring(11, 19) + " UTC"; }
      })
      .catch(function () {});
  }
  var source = new EventSource("/events");
  source.addEventListener("open", function () { if (status) { status.textContent = "· live"; } });
  source.addEventListener("error", function () { if (status) { status.textContent = "· live updates interrupted, retrying"; } });
  source.addEventListener("change", function () {
    if (!pending) { pending = window.setTimeout(refresh, 200); }
  });
}());
