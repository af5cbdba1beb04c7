// Loads the live panel (Go compiled to WebAssembly) into #panel. If anything is
// missing the page stays as the server rendered it and the status says why.
(function () {
  "use strict";
  var panel = document.getElementById("panel");
  if (!panel) return;
  var status = document.getElementById("panel-status");
  function unavailable(why) {
    panel.dataset.status = "offline";
    if (status) status.textContent = "live panel unavailable: " + why;
  }
  if (typeof WebAssembly !== "object" || typeof Go !== "function") {
    unavailable("this browser cannot run it");
    return;
  }
  var go = new Go();
  fetch("/static/wasm/panel.wasm")
    .then(function (resp) {
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      return WebAssembly.instantiateStreaming(resp, go.importObject);
    })
    .then(function (result) { go.run(result.instance); })
    .catch(function (err) { unavailable(String(err && err.message || err)); });
})();
