// Live counters and the weather banner: polls the node every few seconds while the tab is visible.
// No inline script anywhere (the page's CSP forbids it): everything the page shows live is marked
// with data-field="path.in.the.answer".
(function () {
  "use strict";
  var POLL_MS = 5000;
  var source = document.querySelector("[data-live]");
  var url = source ? source.getAttribute("data-live") : "/ui/live/overview";

  function pick(doc, path) {
    return path.split(".").reduce(function (v, key) { return v == null ? v : v[key]; }, doc);
  }

  function show(doc) {
    document.querySelectorAll("[data-field]").forEach(function (el) {
      var name = el.getAttribute("data-field");
      if (name === "updated" && !doc.updated_at_ms) { return; }
      var value = name === "updated" ? new Date(doc.updated_at_ms).toLocaleString() : pick(doc, name);
      if (value === undefined || value === null) { return; }
      if (el.tagName === "METER") { el.value = value; return; }
      el.textContent = typeof value === "number" && !Number.isInteger(value) ? value.toFixed(2) : String(value);
    });
    document.querySelectorAll("[data-field-map]").forEach(function (el) {
      var map = pick(doc, el.getAttribute("data-field-map"));
      if (!map || typeof map !== "object") { return; }
      var keys = Object.keys(map);
      var rows = keys.length ? keys.map(function (k) { return [k, map[k]]; }) : [["none", 0]];
      el.replaceChildren();
      rows.forEach(function (row) {
        var dt = document.createElement("dt");
        var dd = document.createElement("dd");
        dt.textContent = row[0];
        dd.textContent = String(row[1]);
        el.append(dt, dd);
      });
    });
    var banner = document.getElementById("weather-banner");
    var w = doc.weather;
    if (banner && w && w.active) {
      banner.textContent = "Cortisol weather in force: level " + w.level + (w.reason ? " (" + w.reason + ")" : "") +
        (w.halts_untrusted_ingestion ? ". Skills from untrusted peers are halted." : ".");
      banner.hidden = false;
    } else if (banner) {
      banner.hidden = true;
    }
  }

  function poll() {
    if (document.hidden) { return; }
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (doc) { if (doc) { show(doc); } })
      .catch(function () { /* the node may be restarting: the next poll tries again */ });
  }

  var now = document.getElementById("weather-now");
  if (now) { try { show({ weather: JSON.parse(now.textContent) }); } catch (e) { /* shown at the first poll */ } }
  poll();
  setInterval(poll, POLL_MS);
})();
