// Loads the live panel (Go compiled to WebAssembly) into #panel. If anything is
// missing the page stays as the server rendered it and the status says why,
// in the page's language (the catalogue the page embeds for the panel).
(function () {
  "use strict";
  var panel = document.getElementById("panel");
  if (!panel) return;
  var status = document.getElementById("panel-status");
  var words = {};
  try {
    var el = document.getElementById("tm-i18n");
    if (el) words = JSON.parse(el.textContent) || {};
  } catch (e) { /* keep English */ }
  function unavailable(why) {
    panel.dataset.status = "offline";
    var text = words["panel.unavailable"] || "live panel unavailable: %s";
    if (status) status.textContent = text.replace("%s", why);
  }
  if (typeof WebAssembly !== "object" || typeof Go !== "function") {
    unavailable("WebAssembly");
    return;
  }
  var go = new Go();
  // The panel's live heap is small and bounded while a stream of events
  // allocates megabytes a second; WebAssembly has one thread, so every
  // collection stalls the page: collect at 8× the live heap, not 2×. (Set
  // here, not with runtime/debug, which would bring fmt and os into the
  // panel.)
  go.env = Object.assign({}, go.env, { GOGC: "800" });
  fetch("/static/wasm/panel.wasm")
    .then(function (resp) {
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      return WebAssembly.instantiateStreaming(resp, go.importObject);
    })
    .then(function (result) { go.run(result.instance); })
    .catch(function (err) { unavailable(String(err && err.message || err)); });
})();
