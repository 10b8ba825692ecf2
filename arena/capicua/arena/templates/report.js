// The arena report's replay viewer and sortable tables (capicua arena report DIR),
// inlined into the page by capicua/arena/report.py: no library, no request.
(function () {
  "use strict";
  // sortable tables
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var ths = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths, function (th, col) {
      th.addEventListener("click", function () {
        var asc = !th.classList.contains("asc");
        Array.prototype.forEach.call(ths, function (h) { h.classList.remove("asc", "desc"); });
        th.classList.add(asc ? "asc" : "desc");
        var num = th.getAttribute("data-sort") === "num";
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute("data-v"), y = b.cells[col].getAttribute("data-v");
          var c = num ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });

  var data = JSON.parse(document.getElementById("replay-data").textContent);
  var byKey = {};
  data.forEach(function (m) { byKey[m.k] = m; });
  var $ = function (id) { return document.getElementById(id); };
  var cur = null, h = 0, k = 0, timer = null;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function tileEl(a, b, extra) {
    var t = el("span", "tile" + (a === b ? " dbl" : "") + (extra ? " " + extra : ""));
    t.appendChild(el("span", "", String(a)));
    t.appendChild(el("span", "", String(b)));
    t.title = a + "-" + b;
    return t;
  }
  function halves(tile) {
    var p = tile.split("-");
    return [parseInt(p[0], 10), parseInt(p[1], 10)];
  }
  function who(m, seat) { return "seat " + seat + " (" + m.seats[seat] + ")"; }
  function eventText(m, e) {
    switch (e[0]) {
      case "P":
        return who(m, e[1]) + " plays " + e[2] + " on the " + (e[3] === "L" ? "left" : "right");
      case "X": return who(m, e[1]) + " passes";
      case "D": return who(m, e[1]) + " draws " + (e[2] || "a tile");
      case "F": return who(m, e[1]) + " defers the opening to its partner";
      case "R": return who(m, e[1]) + (e[2] ? " asks for a redeal" : " keeps its tiles");
    }
    return String(e);
  }
  function removeTile(list, tile) {
    var i = list.indexOf(tile);
    if (i >= 0) list.splice(i, 1);
  }
  // The line of play after event e, folded as the engine's Line.apply folds it
  // (capicua/engine/line.py): a play ("P") lays its tile on its end, a granted redeal
  // ("R", 1) starts an empty line, any other event leaves it as it is. A line is an array
  // of [left, right] halves from left to right; e[4] holds a play's halves as the engine
  // laid them, so no rule is applied here. A line is never changed: each play gives a new
  // one, as Line.play does.
  function applyToLine(line, e) {
    if (e[0] === "P") return e[3] === "L" ? [e[4]].concat(line) : line.concat([e[4]]);
    if (e[0] === "R" && e[2]) return [];
    return line;
  }
  // a line's open ends [left, right], null before the first tile (Line.ends)
  function lineEnds(line) {
    return line.length ? [line[0][0], line[line.length - 1][1]] : null;
  }
  // the table after the first n events of hand `hand`
  function stateAt(m, hand, n) {
    var H = m.hands[hand], di = 0;
    function deal(d) {
      var seats = d.slice(0, d.length - 1).map(function (s) { return s.slice(); });
      return { seats: seats, stock: d[d.length - 1].slice() };
    }
    var s = H.deals.length ? deal(H.deals[0]) : { seats: m.seats.map(function () { return []; }),
                                                  stock: [] };
    var line = [], lastSeat = null, redeals = 0;
    for (var i = 0; i < n; i++) {
      var e = H.ev[i];
      lastSeat = e[1];
      line = applyToLine(line, e);
      if (e[0] === "P") {
        removeTile(s.seats[e[1]], e[2]);
      } else if (e[0] === "D") {
        if (e[2]) { removeTile(s.stock, e[2]); s.seats[e[1]].push(e[2]); }
        else if (s.stock.length) { s.seats[e[1]].push(s.stock.shift()); }
      } else if (e[0] === "R" && e[2] && di + 1 < H.deals.length) {
        di += 1; redeals += 1; s = deal(H.deals[di]);
      }
    }
    var last = n > 0 ? H.ev[n - 1] : null;
    var lastIdx = -1;
    if (last && last[0] === "P") lastIdx = last[3] === "L" ? 0 : line.length - 1;
    return { seats: s.seats, stock: s.stock, chain: line, ends: lineEnds(line),
             lastSeat: lastSeat, lastIdx: lastIdx, redeals: redeals };
  }
  function render() {
    if (!ready()) return;
    var m = cur, H = m.hands[h], n = H.ev.length;
    var st = stateAt(m, h, k);
    var done = k === n && H.res;
    $("position").textContent = "hand " + H.n + " of " + m.hands.length + " · event " + k + "/" + n;
    // scores
    var sc = done ? H.res.sc : H.pre;
    var box = $("scores"); box.textContent = "";
    m.sides.forEach(function (name, i) {
      var d = el("span", "score", name);
      d.appendChild(el("b", "", String(sc[i])));
      box.appendChild(d);
    });
    // chain
    var chain = $("chain"); chain.textContent = "";
    if (!st.chain.length) chain.appendChild(el("span", "empty", "(empty)"));
    st.chain.forEach(function (p, i) {
      chain.appendChild(tileEl(p[0], p[1], i === st.lastIdx ? "new" : ""));
    });
    $("ends").textContent = st.ends ? "· open ends " + st.ends[0] + " | " + st.ends[1] : "";
    chain.setAttribute("data-text",
      st.chain.map(function (p) { return p[0] + "|" + p[1]; }).join(" "));
    // seats
    var seats = $("seats"); seats.textContent = "";
    st.seats.forEach(function (tiles, seat) {
      var d = el("div", "seat" + (seat === st.lastSeat ? " acted" : ""));
      d.setAttribute("data-seat", String(seat));
      var w = el("div", "who");
      w.appendChild(el("b", "", "seat " + seat + " · " + m.seats[seat]));
      w.appendChild(el("span", "c",
        " · " + m.sides[m.sideOf[seat]] + " · " + tiles.length +
        (tiles.length === 1 ? " tile" : " tiles")));
      d.appendChild(w);
      var t = el("div", "tiles");
      tiles.slice().sort(function (a, b) {
        var x = halves(a), y = halves(b); return x[0] - y[0] || x[1] - y[1];
      }).forEach(function (tile) { var hv = halves(tile); t.appendChild(tileEl(hv[0], hv[1])); });
      d.appendChild(t);
      seats.appendChild(d);
    });
    var stock = $("stock"); stock.textContent = "";
    if (st.stock.length) {
      stock.appendChild(document.createTextNode("stock (" + st.stock.length + "): "));
      st.stock.forEach(function (tile) {
        var hv = halves(tile); stock.appendChild(tileEl(hv[0], hv[1]));
      });
    }
    // result
    var res = "";
    if (done) res = "Hand " + H.n + ": " + H.res.t;
    if (k === n && !H.res) res = "Hand " + H.n + " not finished.";
    if (k === n && h === m.hands.length - 1) res += (res ? " — " : "") + "Match: " + m.out;
    $("result").textContent = res;
    // events so far
    var ol = $("events"); ol.textContent = "";
    var dealt = H.deals.length > 1 ? " (" + H.deals.length + " deals)" : "";
    ol.appendChild(el("li", "hd", "hand " + H.n + ": dealt" + dealt));
    for (var i = 0; i < k; i++) {
      var li = el("li", i === k - 1 ? "cur" : "", eventText(m, H.ev[i]));
      var think = H.th ? H.th[String(i)] : undefined;  // the client's think time, if asked
      if (think !== undefined) li.appendChild(el("span", "think", " · " + think + " ms"));
      li.value = i + 1;
      ol.appendChild(li);
    }
    ol.scrollTop = ol.scrollHeight;
    var atStart = h === 0 && k === 0;
    $("btn-prev").disabled = $("btn-first").disabled = $("btn-prev-hand").disabled = atStart;
    var atEnd = h === m.hands.length - 1 && k === n;
    $("btn-next").disabled = $("btn-last").disabled = atEnd;
    $("btn-next-hand").disabled = h === m.hands.length - 1;
    if (atEnd) stop();
  }
  function go(nh, nk) { h = nh; k = nk; render(); }
  function ready() { return cur !== null && cur.hands.length > 0; }
  function next() {
    if (!ready()) return;
    if (k < cur.hands[h].ev.length) go(h, k + 1);
    else if (h + 1 < cur.hands.length) go(h + 1, 0);
  }
  function prev() {
    if (!ready()) return;
    if (k > 0) go(h, k - 1);
    else if (h > 0) go(h - 1, cur.hands[h - 1].ev.length);
  }
  function nextHand() { if (ready() && h + 1 < cur.hands.length) go(h + 1, 0); }
  function prevHand() { if (!ready()) return; if (k > 0) go(h, 0); else if (h > 0) go(h - 1, 0); }
  function first() { if (ready()) go(0, 0); }
  function last() {
    if (ready()) go(cur.hands.length - 1, cur.hands[cur.hands.length - 1].ev.length);
  }
  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    $("btn-play").textContent = "▶ play";
  }
  function play() {
    if (!ready()) return;
    if (timer !== null) { stop(); return; }
    $("btn-play").textContent = "❚❚ pause";
    timer = setInterval(next, 600);
  }
  // the selected match lives in the address (#match=KEY): a link to it opens it, a reload
  // keeps it; replaceState, so stepping through matches does not fill the Back button
  var HASH = "#match=";
  function keyInHash() {
    if (location.hash.indexOf(HASH) !== 0) return null;
    try { return decodeURIComponent(location.hash.slice(HASH.length)); } catch (e) { return null; }
  }
  function remember(key) {
    var hash = HASH + encodeURIComponent(key);
    if (location.hash === hash) return;
    try {
      history.replaceState(history.state, "", hash);
    } catch (e) {
      location.replace(hash);  // a browser that refuses replaceState on a file: page
    }
  }
  function select(key) {
    var m = byKey[key];
    if (!m) return;
    stop();
    cur = m;
    remember(key);
    document.querySelectorAll("#match-list button.match").forEach(function (b) {
      b.classList.toggle("sel", b.getAttribute("data-key") === key);
    });
    $("viewer-empty").hidden = true;
    $("viewer-body").hidden = false;
    $("match-title").textContent = key + ": " + m.sides.join(" v ") + " · final " + m.sc.join("–");
    if (!m.hands.length) {
      ["scores", "chain", "seats", "stock", "events", "position"].forEach(function (id) {
        $(id).textContent = "";
      });
      $("result").textContent = "No hand was played. Match: " + m.out;
      return;
    }
    go(0, 0);
    $("viewer").focus({ preventScroll: true });
  }
  document.querySelectorAll("#match-list button.match").forEach(function (b) {
    b.addEventListener("click", function () { select(b.getAttribute("data-key")); });
  });
  $("match-filter").addEventListener("input", function () {
    var q = this.value.toLowerCase();
    document.querySelectorAll("#match-list li").forEach(function (li) {
      li.hidden = q !== "" && li.textContent.toLowerCase().indexOf(q) < 0;
    });
  });
  $("btn-next").addEventListener("click", next);
  $("btn-prev").addEventListener("click", prev);
  $("btn-next-hand").addEventListener("click", nextHand);
  $("btn-prev-hand").addEventListener("click", prevHand);
  $("btn-first").addEventListener("click", first);
  $("btn-last").addEventListener("click", last);
  $("btn-play").addEventListener("click", play);
  document.addEventListener("keydown", function (ev) {
    if (!cur || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    var t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) return;
    var act = { ArrowRight: next, ArrowLeft: prev, ArrowDown: nextHand, PageDown: nextHand,
                ArrowUp: prevHand, PageUp: prevHand, Home: first, End: last, " ": play }[ev.key];
    if (act) { ev.preventDefault(); act(); }
  });
  function unreadable(key) {
    return Array.prototype.some.call(document.querySelectorAll("#replay-problems li"),
      function (li) { return li.getAttribute("data-key") === key; });
  }
  function openFromHash() {
    var key = keyInHash();
    if (key === null || (cur && cur.k === key)) return;
    if (byKey[key]) {
      select(key);
      $("viewer").scrollIntoView();
    } else if (!cur) {
      $("viewer-empty").textContent = "Match " + key + (unreadable(key)
        ? ": its replay could not be read (see above)." : " is not in this page.") +
        " Pick a match from the list.";
    }
  }
  window.addEventListener("hashchange", openFromHash);
  openFromHash();
})();
