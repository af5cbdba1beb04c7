// Loads the live panel (Go compiled to WebAssembly) into #panel. If anything is
// missing the page stays as the server rendered it and the status says why,
// in the page's language (the catalogue the page embeds for the panel).
(function () {
  "use strict";
  // Scripts run: what is there for a page without them (a lesson's tables
  // of its replicas) may step aside for the panel (app.css, .js).
  document.documentElement.classList.add("js");
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
  // tidemarkDOM applies the DOM writes of one of the panel's frames, sent as
  // one string: each call from Go into JS costs microseconds (its arguments
  // are converted one by one), so thousands of small writes a frame cost
  // more than the writes themselves. The panel numbers the elements it
  // writes to (handles > 0); the string is a NUL-separated list of fields,
  // each write an op letter, a handle and the op's arguments (see
  // wasm/dom.go), ending with a NUL.
  var els = [];
  // text sets an element's text: the data of its one text node when it
  // has one (cheaper for Chromium than replacing the node).
  function text(el, s) {
    var n = el.firstChild;
    if (n && n.nodeType === 3 && !n.nextSibling) n.data = s;
    else el.textContent = s;
  }
  // The canvas ops draw a figure's cells (panel.Painter.Paint): P gives
  // the palette (8 epoch colours, ink, paper, a truncated record's fill
  // and ink, an aborted record's fill), C sizes a canvas to w×h CSS pixels at the device's pixel
  // ratio and clears it, K gives a cell (cell), D a down broker's lane to
  // dim (x, y, w, h: veiled in paper once its cells are drawn, as the
  // lanes' SVG drew them at .55 opacity). A canvas's cells are drawn
  // together (cells) once its K ops are all read, as the lanes' SVG drew
  // them, texts in the colours panel.CellText says (TestCanvasContrast):
  // boxes of one colour as one path, then texts font by font. Setting a
  // style costs Chromium more than drawing with it, and square boxes cost
  // it less than rounded ones.
  var pal = [], ctx = null, ks = [], dims = [];
  function canvas(cv, w, h) {
    cells();
    var dpr = window.devicePixelRatio || 1, pw = Math.round(w * dpr), ph = Math.round(h * dpr);
    if (cv.width !== pw || cv.height !== ph) {
      cv.width = pw;
      cv.height = ph;
      cv.style.width = w + "px"; // the CSSOM: the page's CSP refuses style attributes
      cv.style.height = h + "px";
    }
    ctx = cv.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.textAlign = "center";
  }
  // boxes fills (colour fill) and strokes (colour stroke, width, dash) the
  // boxes of the cells k says yes to, h high at dy under each cell's top.
  function boxes(k, fill, stroke, width, dash, dy, h) {
    ctx.beginPath();
    var any = false;
    for (var i = 0; i < ks.length; i++) {
      var c = ks[i];
      if (k(c)) { ctx.rect(c.x + 1, c.y + dy, 38, h); any = true; }
    }
    if (!any) return;
    ctx.fillStyle = fill;
    ctx.fill();
    if (!stroke) return;
    ctx.strokeStyle = stroke;
    ctx.lineWidth = width;
    ctx.setLineDash(dash);
    ctx.stroke();
  }
  // texts draws, in font, the texts of the cells k says yes to, each in
  // the colour ink(c) at its place: t(c) returns [text, dy, …].
  function texts(font, k, t) {
    ctx.font = font;
    var ink = "";
    for (var i = 0; i < ks.length; i++) {
      var c = ks[i];
      if (!k(c)) continue;
      if (c.ink !== ink) ctx.fillStyle = ink = c.ink;
      var ts = t(c);
      for (var j = 0; j < ts.length; j += 2) ctx.fillText(ts[j], c.x + 20, c.y + ts[j + 1]);
    }
  }
  // cells draws the cells of the K ops read since the last call: records
  // (state 0 committed, 1 not yet), truncated records (2), transaction
  // markers (3) and records of aborted transactions (4).
  function cells() {
    if (!ks.length) return;
    var ep, ghost = function (c) { return c.s === 2; }, rec = function (c) { return c.s !== 2; };
    for (ep = 0; ep < 8; ep++) boxes(function (c) { return c.s === 0 && c.ep === ep; }, pal[ep], pal[8], 1.5, [], 14, 40);
    // Not committed: white, a heavy dashed border, a band of the colour.
    boxes(function (c) { return c.s === 1; }, pal[9], pal[8], 2.5, [5, 3], 14, 40);
    for (ep = 0; ep < 8; ep++) boxes(function (c) { return c.s === 1 && c.ep === ep; }, pal[ep], "", 0, [], 14, 6);
    boxes(ghost, pal[10], pal[11], 2, [3, 2], 58, 40);
    // A transaction marker (3): filled in ink; a record of an aborted
    // transaction (4): grey, a dashed ink border.
    boxes(function (c) { return c.s === 3; }, pal[8], "", 0, [], 14, 40);
    boxes(function (c) { return c.s === 4; }, pal[12], pal[8], 2, [2, 2], 14, 40);
    // Every line is at least 11 px, as the page's other text (issue 24).
    texts("11px system-ui,sans-serif", rec, function (c) { return [c.off, 28, c.epl, 52]; });
    texts("bold 11px system-ui,sans-serif", rec, function (c) { return [c.val, 40]; });
    texts("11px system-ui,sans-serif", ghost, function (c) { return [c.off, 70, c.epl, 95]; });
    texts("bold 11px system-ui,sans-serif", ghost, function (c) { return [c.val, 83]; });
    // A truncated record's value is struck out.
    ctx.beginPath();
    ks.forEach(function (c) { if (c.s === 2) { ctx.moveTo(c.x + 3, c.y + 79); ctx.lineTo(c.x + 37, c.y + 79); } });
    ctx.strokeStyle = pal[11];
    ctx.lineWidth = 2;
    ctx.setLineDash([]);
    ctx.stroke();
    if (dims.length) {
      ctx.fillStyle = pal[9];
      ctx.globalAlpha = 0.45;
      for (var d = 0; d < dims.length; d += 4) ctx.fillRect(dims[d], dims[d + 1], dims[d + 2], dims[d + 3]);
      ctx.globalAlpha = 1;
      dims.length = 0;
    }
    ks.length = 0;
  }
  // cell reads a K op, f[i…i+7]: state, x, y, epoch colour, offset line,
  // value and epoch line; its texts' colour as panel.CellText says.
  function cell(f, i) {
    var c = { s: +f[i + 1], x: +f[i + 2], y: +f[i + 3], ep: +f[i + 4], off: f[i + 5], val: f[i + 6], epl: f[i + 7], ink: pal[8] };
    if (c.s === 2) c.ink = pal[11];
    else if (c.s === 3 || c.s === 0 && (c.ep === 5 || c.ep === 6)) c.ink = pal[9];
    ks.push(c);
  }
  // Messages in flight (panel.Painter.Fly's M ops) are drawn on one canvas
  // over the topology (#topo-flights), each at the place its start time and
  // duration give it, in every frame while one moves: first in the frame
  // whose batch brought it, then by requestAnimationFrame. Shapes are SVG
  // paths (Path2D, kept by path), colours the page's CSS variables.
  // The canvas's size and font are read once and after a resize (reading
  // them in every frame would force a style and layout pass).
  // Under a stream of events the panel paces its frames (an R op gives the
  // pace and the slack, ms; pace 0: none): the messages are drawn in its
  // frames then, and in a frame of their own only once a pace has passed
  // without one.
  var flBoxes = [], flSpots = [], fl = [], flDue = false, flPaths = {}, flColours = {}, flCv = null, flW = 0, flH = 0, flFont = "", flPace = 0, flSlack = 0, flAt = 0;
  function flColour(v) {
    if (v.charAt(0) !== "-") return v;
    if (!(v in flColours)) flColours[v] = getComputedStyle(document.documentElement).getPropertyValue(v).trim() || "#767676";
    return flColours[v];
  }
  function flPath(d) { return flPaths[d] || (flPaths[d] = new Path2D(d)); }
  // flNodeBoxes returns the boxes (CSS px, on the canvas) of the nodes and
  // link buttons drawn over the messages, which a label must not go under;
  // read from the layout at most once a second.
  var flNodes = [], flNodesAt = -1e9;
  function flNodeBoxes(cv, now) {
    if (now - flNodesAt < 1000) return flNodes;
    flNodesAt = now;
    var c = cv.getBoundingClientRect(), els = document.querySelectorAll("#topo .node, #topo .linkctl");
    flNodes = [];
    for (var i = 0; i < els.length; i++) {
      var r = els[i].getBoundingClientRect();
      if (r.width) flNodes.push({ x: r.left - c.left, y: r.top - c.top, w: r.width, h: r.height, node: true });
    }
    return flNodes;
  }
  // flSpot places a message's label where no label drawn before it in this
  // frame is, no node is, and inside the canvas (w×h CSS px): at its own place beside
  // the message (panel.Flight.labelAt), else a line above or below it, else
  // on its other side. A label with no free spot is not drawn this frame
  // (the message's shape still is): overprinted labels read as neither.
  // It returns the spot in the message's units, its text's width and
  // whether the text ends there, and adds its box (CSS px) to boxes.
  function flSpot(c, m, fs, boxes, w, h) {
    var tw = c.measureText(m.label).width, X = (c.getTransform().e) / (window.devicePixelRatio || 1), Y = (c.getTransform().f) / (window.devicePixelRatio || 1);
    var end0 = !!(m.flags & 8), line = fs + 2;
    var tries = [[m.lx, m.ly, end0], [m.lx, m.ly - line, end0], [m.lx, m.ly + line, end0],
      [-m.lx, m.ly, !end0], [-m.lx, m.ly - line, !end0], [-m.lx, m.ly + line, !end0]];
    for (var i = 0; i < tries.length; i++) {
      var t = tries[i], x = t[2] ? t[0] - tw : t[0];
      var b = { x: X + x * m.s, y: Y + (t[1] - fs) * m.s, w: tw * m.s, h: (fs + 3) * m.s };
      if (b.x < 0 || b.y < 0 || b.x + b.w > w || b.y + b.h > h) continue;
      var free = true;
      for (var j = 0; j < boxes.length && free; j++) {
        var o = boxes[j];
        free = b.x >= o.x + o.w || o.x >= b.x + b.w || b.y >= o.y + o.h || o.y >= b.y + b.h;
      }
      if (free) { boxes.push(b); return { x: t[0], y: t[1], end: t[2], tw: tw }; }
    }
    return null;
  }
  function flight(f, i) {
    var m = { x0: +f[i + 2], y0: +f[i + 3], x1: +f[i + 4], y1: +f[i + 5], dur: +f[i + 7], s: +f[i + 8], flags: +f[i + 9],
      d: f[i + 10], flap: f[i + 11], fill: f[i + 12], label: f[i + 13], lx: +f[i + 14], ly: +f[i + 15], title: f[i + 16] };
    m.t0 = performance.now() + +f[i + 6];
    fl.push(m);
  }
  // flFrame asks for a frame of the messages' own: at once, or under a
  // pace once it has passed since they were last drawn (the panel's frame
  // may draw them before then), asked for the slack early as the panel's
  // are (panel.PaceWait). flDue: a frame or a wait for one is pending.
  function flFrame() {
    if (flDue) return;
    flDue = true;
    var wait = flPace ? flAt + flPace - flSlack - performance.now() : 0;
    if (wait > 0) setTimeout(function () { flDue = false; if (fl.length) flFrame(); }, wait);
    else requestAnimationFrame(function () { flDue = false; drawFlights(); });
  }
  function drawFlights() {
    var now = flAt = performance.now();
    var cv = flCv;
    if (!cv || !cv.isConnected) {
      cv = flCv = document.getElementById("topo-flights");
      if (!cv) { fl.length = 0; return; }
      flW = cv.clientWidth; flH = cv.clientHeight;
      flFont = "600 10px " + getComputedStyle(cv).fontFamily;
      if (typeof ResizeObserver === "function") {
        new ResizeObserver(function (es) { flW = es[0].contentRect.width; flH = es[0].contentRect.height; }).observe(cv);
      }
    }
    var dpr = window.devicePixelRatio || 1, w = flW, h = flH;
    var pw = Math.round(w * dpr), ph = Math.round(h * dpr);
    if (cv.width !== pw || cv.height !== ph) { cv.width = pw; cv.height = ph; }
    var c = cv.getContext("2d"), ink = flColour("--ink"), paper = flColour("--paper");
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, w, h);
    c.font = flFont;
    c.lineJoin = "round";
    var keep = 0, boxes = flNodeBoxes(cv, now).slice(), spots = [];
    for (var i = 0; i < fl.length; i++) {
      var m = fl[i], t = (now - m.t0) / m.dur;
      if (t >= 1) continue;
      fl[keep++] = m;
      t = Math.max(t, 0);
      var a = 1, k = t;
      if (m.flags & 2) k = 0.5; // reduced motion: still, halfway
      else if (m.flags & 1) { k = Math.min(t, 0.5); if (t > 0.5) a = 2 - 2 * t; } // lost: halfway, then fades
      var mx = m.x0 + (m.x1 - m.x0) * k, my = m.y0 + (m.y1 - m.y0) * k;
      spots.push([mx, my, m.title]);
      c.setTransform(dpr * m.s, 0, 0, dpr * m.s, dpr * mx, dpr * my);
      c.globalAlpha = a;
      var p = flPath(m.d);
      if (m.flags & 4) { c.strokeStyle = flColour(m.fill); c.lineWidth = 3; c.stroke(p); }
      else { c.fillStyle = flColour(m.fill); c.fill(p); c.strokeStyle = ink; c.lineWidth = 1.2; c.stroke(p); }
      if (m.flap) { c.strokeStyle = ink; c.lineWidth = 1.2; c.stroke(flPath(m.flap)); }
      // At least 11 px on the screen however small the stage is drawn (a
      // phone's is about half its size).
      var fs = Math.max(10, 11 / m.s);
      c.font = flFont.replace("10px", fs.toFixed(1) + "px");
      var spot = flSpot(c, m, fs, boxes, w, h);
      if (spot) {
        c.textAlign = spot.end ? "end" : "start";
        c.strokeStyle = paper; c.lineWidth = 3;
        c.strokeText(m.label, spot.x, spot.y);
        c.fillStyle = ink;
        c.fillText(m.label, spot.x, spot.y);
        if (m.flags & 1) { // a lost message's label is struck out
          var tw = spot.tw, x = spot.end ? spot.x - tw : spot.x;
          c.fillRect(x, spot.y - 4, tw, 1.2);
        }
      }
    }
    flBoxes = boxes.filter(function (b) { return !b.node; });
    flSpots = spots;
    fl.length = keep;
    c.globalAlpha = 1;
    if (keep) flFrame();
  }
  // What the messages in flight carry, on hover and on keyboard focus: the
  // canvas has no elements to point at, so the topology shows, in #topo-tip,
  // the description (every message a grouped one carries) of the message
  // nearest the pointer, or of every message in flight while the topology
  // has the focus.
  (function tips() {
    var topo = document.getElementById("topo");
    if (!topo) return;
    var tip = document.createElement("div");
    tip.id = "topo-tip";
    tip.className = "topo-tip";
    tip.setAttribute("role", "tooltip");
    tip.hidden = true;
    topo.appendChild(tip);
    function show(text, x, y) {
      if (!text) { tip.hidden = true; return; }
      tip.textContent = text;
      tip.style.left = Math.round(x) + "px";
      tip.style.top = Math.round(y) + "px";
      tip.hidden = false;
    }
    topo.addEventListener("pointermove", function (ev) {
      var c = (flCv || topo).getBoundingClientRect(), x = ev.clientX - c.left, y = ev.clientY - c.top, best = null, d2 = 18 * 18;
      for (var i = 0; i < flSpots.length; i++) {
        var dx = flSpots[i][0] - x, dy = flSpots[i][1] - y;
        if (dx * dx + dy * dy < d2) { d2 = dx * dx + dy * dy; best = flSpots[i]; }
      }
      show(best && best[2], x + 12, y + 12);
    });
    topo.addEventListener("pointerleave", function () { tip.hidden = true; });
    topo.addEventListener("focus", function () {
      show(flSpots.slice(0, 8).map(function (s) { return s[2]; }).join("\n"), 4, 4);
    });
    topo.addEventListener("blur", function () { tip.hidden = true; });
  })();
  window.tidemarkDOM = {
    // labels returns the boxes (CSS px, on the topology) of the message
    // labels the last frame drew: tests check no two overlap.
    labels: function () { return flBoxes.map(function (b) { return [b.x, b.y, b.w, b.h]; }); },
    // spots returns where the last frame drew each message (CSS px on the
    // topology's canvas), for the tests of its tooltip.
    spots: function () { return flSpots.map(function (s) { return [s[0], s[1]]; }); },
    adopt: function (h, el) { els[h] = el; },
    // apply does the writes and reports whether all went well (else the
    // panel draws the lanes afresh).
    apply: function (ops) {
      var f = ops.split("\0"), n = f.length - 1, i = 0;
      try {
        while (i < n) {
          var h = +f[i + 1];
          switch (f[i]) {
          case "a": els[h].setAttribute(f[i + 2], f[i + 3]); i += 4; break; // attribute
          case "t": text(els[h], f[i + 2]); i += 3; break;
          case "h": els[h].innerHTML = f[i + 2]; i += 3; break; // markup of the children
          case "c": els[h] = els[+f[i + 2]].children[+f[i + 3]]; i += 4; break; // child
          case "f": els[h] = undefined; i += 2; break; // forget
          case "P": pal = f.slice(i + 2, i + 15); i += 15; break; // palette
          case "C": canvas(els[h], +f[i + 2], +f[i + 3]); i += 4; break;
          case "K": cell(f, i); i += 8; break;
          case "M": flight(f, i); i += 17; break; // a message in flight
          case "R": flPace = +f[i + 2]; flSlack = +f[i + 3]; i += 4; break; // the messages' pace
          case "D": dims.push(+f[i + 2], +f[i + 3], +f[i + 4], +f[i + 5]); i += 6; break;
          default: throw new Error("unknown op " + f[i]);
          }
        }
        cells();
        if (fl.length && (!flDue || flPace)) drawFlights(); // under a pace, in the panel's frame
      } catch (e) {
        ks.length = 0;
        dims.length = 0;
        console.error("tidemark panel: DOM write " + f[i] + " " + f[i + 1] + ": " + e);
        return false;
      }
      return true;
    }
  };
  // tidemarkSend posts a control form's fields (URLSearchParams) to
  // /ui/action for the panel (wasm/main.go's send) and hands done whether
  // it worked and the text to show.
  window.tidemarkSend = function (body, done) {
    fetch("/ui/action", { method: "POST", body: body, credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (j) { done(!!j.ok, String(j.text)); }, function (e) { done(false, String(e)); });
  };
  // tidemarkHistory fetches the page of the lab's history before seq
  // before (0: the newest) for the panel (GET /api/v1/history,
  // wasm/history.go) and hands done its text and first_seq, or null when
  // the request fails (a lab that keeps no history answers 501). Written
  // here, the request costs the WASM panel's size nothing. A lesson run's
  // stream (#panel's data-ws) has no history to page. The timeline
  // (data-testid="timeline") shows what it reaches: data-first-seq, the
  // history's first event, and data-last-seq, the live state's (#panel's
  // data-seq).
  var panelEl = document.getElementById("panel"), timeline = document.getElementById("timeline");
  if (panelEl && (!panelEl.dataset.ws || panelEl.dataset.ws === "/ws")) {
    window.tidemarkHistory = function (before, done) {
      fetch("/api/v1/history?limit=1000" + (before ? "&before=" + before : ""))
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (t) { return [t, t ? JSON.parse(t).first_seq : 0]; })
        .then(function (p) {
          if (p[1] && timeline) timeline.dataset.firstSeq = p[1];
          done(p[0], p[1]);
        }, function () { done(null, 0); }); // a failed request or a page that is not JSON
    };
  }
  if (panelEl && timeline) {
    timeline.setAttribute("data-testid", "timeline");
    new MutationObserver(function () { timeline.dataset.lastSeq = panelEl.dataset.seq; })
      .observe(panelEl, { attributes: true, attributeFilter: ["data-seq"] });
  }
  // A new devicePixelRatio (zoom, another screen) needs the canvases drawn
  // again at the new resolution.
  (function watchRatio() {
    if (typeof matchMedia !== "function") return;
    matchMedia("(resolution: " + (window.devicePixelRatio || 1) + "dppx)").addEventListener("change", function () {
      if (window.tidemarkRedraw) window.tidemarkRedraw();
      watchRatio();
    }, { once: true });
  })();
  // Lane figures out of view (below the fold, or scrolled out of the
  // stage's lanes box) are marked data-offscreen, which app.css turns into
  // content-visibility: hidden: the panel still keeps their SVG and
  // accessible lists up to date, but draws their canvas, and Chromium
  // styles, lays out and paints them, only once they come within a
  // quarter of the view (or of the lanes box) of being seen. At 1,000
  // records/s every cell of every figure changes between frames.
  //
  // A figure wider than its box (a phone, the stage's column) shows its
  // newest records: the furthest LEO marker and the slot after it at the
  // right edge, the HW markers too unless one lags further behind than the
  // box is wide (the newest records win). It follows them as records come while
  // the learner leaves it there; scrolled back, it keeps its place until
  // the learner scrolls up to the newest again, as a terminal does. The
  // panel draws a figure anew when its shape changes (a lane, a row of
  // truncated records): what each partition's figure shows is kept here.
  (function () {
    var lanes = document.getElementById("lanes");
    if (!lanes) return;
    // after is how far past the LEO marker the newest view reaches (SVG
    // units, 1:1 with CSS pixels): the slot the next record goes to and
    // the figure's end (cellW + 10 in wasm/panel/lanes.go).
    var after = 50;
    var kept = {}; // topic/partition → scrollLeft, for figures scrolled back
    function key(f) { return f.dataset.topic + "/" + f.dataset.partition; }
    // newest is the scrollLeft that shows f's newest records, from the
    // markers' transforms (attributes, so reading them lays nothing out)
    // and f's padding and width, measured by place.
    function newest(f) {
      var x = 0, ms = f.querySelectorAll("g.marker.leo");
      for (var i = 0; i < ms.length; i++) x = Math.max(x, parseFloat(ms[i].getAttribute("transform").slice(10)) || 0);
      return Math.max(0, Math.round(f.tmPad + x + after - f.tmWidth));
    }
    // Scrolled to its newest records, a figure hides its lanes' label
    // column (broker, leader star, ISR/OSR, LEO·HW), which is SVG and
    // cannot stick. While it is scrolled, a copy of each label in HTML
    // sticks to its left edge (aria-hidden: the SVG's texts and titles
    // stay what assistive technology reads). A label is rewritten only
    // when its text changed.
    function pin(f) {
      var on = f.scrollLeft > 8;
      if (on !== f.classList.contains("pinned")) f.classList.toggle("pinned", on);
      if (on) pinText(f);
    }
    function words(el) {
      if (!el) return "";
      var out = [];
      for (var c = el.firstElementChild; c; c = c.nextElementSibling) out.push(c.textContent);
      return out.length ? out.join(" ") : el.textContent;
    }
    function pinText(f) {
      var svg = f.querySelector("svg.lanes-svg");
      if (!svg) return;
      var box = f.lastElementChild;
      if (!box || box.className !== "lane-pins") {
        box = document.createElement("div");
        box.className = "lane-pins";
        box.setAttribute("aria-hidden", "true");
        f.appendChild(box);
      }
      // Positions go through the CSSOM: the page's CSP refuses inline
      // style attributes.
      var h = parseFloat(svg.getAttribute("height")) || 0, gs = svg.querySelectorAll("g.replica");
      while (box.children.length > gs.length) box.lastElementChild.remove();
      while (box.children.length < gs.length) box.appendChild(document.createElement("span"));
      for (var i = 0; i < gs.length; i++) {
        var y = parseFloat((gs[i].getAttribute("transform") || "").split(",")[1]) || 0;
        var t = words(gs[i].querySelector("g.lane-id")) + "\n" + words(gs[i].querySelector(".lane-nums"));
        var top = (y + 12 - h) + "px", sp = box.children[i];
        if (sp.textContent !== t) sp.textContent = t;
        if (sp.style.top !== top) sp.style.top = top;
      }
    }
    function scrollFig(f, left) {
      f.tmAt = left;
      f.scrollLeft = left;
    }
    // place measures f and scrolls it to the newest records, or to where
    // the learner left it. Out of view f has no scroll width: it is placed
    // when it comes into view.
    function place(f) {
      if (!f.isConnected || "offscreen" in f.dataset) return;
      f.tmPad = parseFloat(getComputedStyle(f).paddingLeft) || 0;
      f.tmWidth = f.clientWidth;
      var k = key(f);
      scrollFig(f, k in kept ? kept[k] : newest(f));
    }
    // follow keeps the figures that show their newest records there when
    // an LEO moves. Writing scrollLeft lays the page out, so it is written
    // only when the newest view moved: while a partition's window fills,
    // its first 20 records; then the furthest LEO stays at the window's end.
    function follow(f) {
      if (!f || f.tmWidth === undefined || key(f) in kept || "offscreen" in f.dataset) return;
      var left = newest(f);
      if (left !== f.tmAt) scrollFig(f, left);
    }
    // A cell's tooltip: its canvas has none, so the figure takes the
    // name of the record under the pointer from its lane's list.
    lanes.addEventListener("mousemove", function (e) {
      var f = e.target.closest ? e.target.closest("figure.lane-fig") : null;
      if (!f) return;
      var svg = f.querySelector("svg.lanes-svg"), gs = f.querySelectorAll("g.replica"), t = "";
      var r = svg.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
      for (var i = gs.length - 1; i >= 0; i--) {
        var ly = parseFloat((gs[i].getAttribute("transform") || "").split(",")[1]) || 0, m = gs[i].querySelector("g.marker.leo");
        if (y < ly) continue;
        if (!m) break;
        var off = +gs[i].dataset.leo + Math.floor((x - parseFloat(m.getAttribute("transform").slice(10))) / 40);
        var c = f.querySelector('.lane-recs[data-broker="' + gs[i].dataset.broker + '"] ' + (y - ly >= 58 ? ".ghost" : ".rec") + '[data-offset="' + off + '"]');
        if (c) t = c.getAttribute("aria-label");
        break;
      }
      if (f.title !== t) f.title = t;
    }, { passive: true });
    lanes.addEventListener("scroll", function (e) {
      var f = e.target;
      if (!f.classList || !f.classList.contains("lane-fig") || f.tmWidth === undefined || "offscreen" in f.dataset) return;
      f.tmWidth = f.clientWidth;
      if (f.scrollLeft >= Math.min(newest(f), f.scrollWidth - f.tmWidth) - 2) delete kept[key(f)];
      else kept[key(f)] = f.scrollLeft;
      pin(f);
    }, { capture: true, passive: true });
    new MutationObserver(function (ms) {
      var seen = [];
      ms.forEach(function (m) {
        var f = m.target.closest("figure");
        if (seen.indexOf(f) < 0) { seen.push(f); follow(f); if (f && f.classList.contains("pinned")) pinText(f); }
      });
    }).observe(lanes, { subtree: true, attributeFilter: ["data-leo"] });
    var ro = typeof ResizeObserver === "function" && new ResizeObserver(function (entries) {
      entries.forEach(function (e) { place(e.target); }); // also when first laid out
    });
    var io = typeof IntersectionObserver === "function" && new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (!e.isIntersecting) { e.target.dataset.offscreen = ""; return; }
        if (!("offscreen" in e.target.dataset)) return;
        delete e.target.dataset.offscreen;
        place(e.target);
        if (window.tidemarkRedraw) window.tidemarkRedraw(); // its canvas was not drawn out of view
      });
    }, { rootMargin: "25% 0px", scrollMargin: "25% 0px" });
    new MutationObserver(function () { // the panel drew new figures
      if (io) io.disconnect();
      if (ro) ro.disconnect();
      for (var f = lanes.firstElementChild; f; f = f.nextElementSibling) {
        if (io) io.observe(f);
        if (ro) ro.observe(f);
      }
    }).observe(lanes, { childList: true });
  })();
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
// A finished lesson run left (the tab closed, another page opened) ends at
// once, rather than holding one of the lab's private clusters until the
// learner's next start: the page marks itself data-leave with the run's
// leave address once its last step is shown. Its own forms (Back, Replay,
// a speed) come back to the run and send nothing; the server ends only a
// finished run of the learner's own.
(function () {
  "use strict";
  var screen = document.querySelector('.lesson-screen[data-leave]:not([data-leave=""])');
  if (!screen || typeof navigator.sendBeacon !== "function") return;
  var staying = false;
  document.addEventListener("submit", function () { staying = true; }, true);
  window.addEventListener("pagehide", function () {
    if (!staying) navigator.sendBeacon(screen.dataset.leave);
  });
})();
// The stage's charts are drawn by the server, which follows the lab from
// its start (GET /ui/charts): fetched again every second while the page
// shows, and written only when they changed.
(function () {
  "use strict";
  var el = document.querySelector("#stage-charts[data-src]");
  if (!el || typeof fetch !== "function") return;
  var last = el.innerHTML;
  function refresh() {
    if (document.hidden) return;
    fetch(el.dataset.src, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (h) { if (h !== null && h !== last) { el.innerHTML = h; last = h; } })
      .catch(function () { /* the next second tries again */ });
  }
  setInterval(refresh, 1000);
})();
