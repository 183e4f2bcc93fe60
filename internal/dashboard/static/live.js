// Live updates: the server sends an event when a DRPlacementControl or a DRCluster changes;
// the page then fetches its live part once and morphs the page into it, keeping the elements
// that did not change. No timer polls the server.
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
        var next = document.createElement("div");
        next.innerHTML = html;
        morph(live, next);
        if (status) { status.textContent = "· live, updated " + new Date().toISOString().substring(11, 19) + " UTC"; }
      })
      .catch(function () {});
  }
  // morph makes the children of into those of from, keeping every element whose tag and
  // attributes did not change: a link being focused, clicked or hovered stays the same element
  // while the text around it (an age, a phase) changes.
  function morph(into, from) {
    var have = into.childNodes, want = from.childNodes, i;
    for (i = 0; i < want.length; i++) {
      var w = want[i], h = have[i];
      if (!h) { into.appendChild(w.cloneNode(true)); continue; }
      if (same(h, w)) {
        if (h.nodeType === 1) { morph(h, w); } else if (h.nodeValue !== w.nodeValue) { h.nodeValue = w.nodeValue; }
      } else {
        into.replaceChild(w.cloneNode(true), h);
      }
    }
    while (have.length > want.length) { into.removeChild(into.lastChild); }
  }
  // same reports whether a node can be kept for another: the same kind, and for an element the
  // same tag and attributes.
  function same(a, b) {
    if (a.nodeType !== b.nodeType) { return false; }
    if (a.nodeType !== 1) { return true; }
    if (a.tagName !== b.tagName || a.attributes.length !== b.attributes.length) { return false; }
    for (var i = 0; i < b.attributes.length; i++) {
      if (a.getAttribute(b.attributes[i].name) !== b.attributes[i].value) { return false; }
    }
    return true;
  }
  var source = new EventSource("/events");
  source.addEventListener("open", function () { if (status) { status.textContent = "· live"; } });
  source.addEventListener("error", function () { if (status) { status.textContent = "· live updates interrupted, retrying"; } });
  source.addEventListener("change", function () {
    if (!pending) { pending = window.setTimeout(refresh, 200); }
  });
}());
