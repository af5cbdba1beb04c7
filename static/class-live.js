// The teacher's live class (/class and /class/questions): the server sends
// the seat rows or the per-question content again at every change over
// the websocket /class/live, rendered in the page's language; this puts
// them into the page. Without it the page is current when loaded.
(function () {
  "use strict";
  var el = document.querySelector("[data-live]");
  if (!el || !window.WebSocket) return;
  var view = el.getAttribute("data-live");
  var delay = 500;
  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var lesson = new URLSearchParams(location.search).get("lesson");
    var ws = new WebSocket(scheme + location.host + "/class/live?view=" + encodeURIComponent(view) +
      (lesson ? "&lesson=" + encodeURIComponent(lesson) : ""));
    ws.onopen = function () { delay = 500; document.body.setAttribute("data-live-state", "open"); };
    ws.onmessage = function (ev) {
      var m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      var target = document.getElementById(m.target);
      if (!target) return;
      target.innerHTML = m.html; // rendered and escaped by the server's templates
      var n = Number(document.body.getAttribute("data-live-updates") || "0") + 1;
      document.body.setAttribute("data-live-updates", String(n));
    };
    ws.onclose = function () {
      document.body.setAttribute("data-live-state", "closed");
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }
  connect();
})();
