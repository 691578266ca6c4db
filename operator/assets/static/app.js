// The operator page's only script: it holds the page's key and puts it in
// every form the page sends; live approval cards over server-sent events,
// a notification for a new card, and the tools filter as you type.
//
// The key comes once, in the fragment of the address the page is opened
// on (after the token or a one-time code), and is kept in this origin's
// storage, which no page on another port can read: the session cookie is
// sent to every port of 127.0.0.1, so it alone must never decide
// anything (operator.go).
"use strict";
(function () {
  var KEY = "quiver-page-key";
  if (location.hash.indexOf("#key=") === 0) {
    var fresh = location.hash.slice(5), before = null;
    history.replaceState(null, "", location.pathname + location.search);
    try {
      before = localStorage.getItem(KEY);
      localStorage.setItem(KEY, fresh);
    } catch (e) { /* no storage: changes are refused, with why */ }
    // Any page can send the browser here with a key of its choosing: keep
    // it only if it is this session's, else the one held before.
    fetch("/session/key", { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "csrf=" + encodeURIComponent(fresh) }).then(function (r) {
      if (r.status !== 204) throw new Error("not this session's key");
    }).catch(function () {
      try {
        if (localStorage.getItem(KEY) === fresh) {
          if (before === null) localStorage.removeItem(KEY); else localStorage.setItem(KEY, before);
        }
      } catch (e) { /* nothing kept */ }
    });
  }
  document.addEventListener("submit", function (ev) {
    var field = ev.target.querySelector('input[name="csrf"]');
    if (!field) return;
    var key = null;
    try { key = localStorage.getItem(KEY); } catch (e) { /* refused below, with why */ }
    field.value = key || "";
  }, true);
  var page = document.body.dataset.page;
  if (page === "Approvals") {
    var seen = null;
    var cards = document.getElementById("cards");
    var notify = document.getElementById("notify");
    if ("Notification" in window && Notification.permission === "default") {
      notify.hidden = false;
      notify.addEventListener("click", function () {
        Notification.requestPermission().then(function () { notify.hidden = true; });
      });
    }
    var es = new EventSource("/approvals/events");
    es.addEventListener("cards", function (ev) {
      var ids = ev.data ? ev.data.split(",") : [];
      var fresh = seen !== null && ids.some(function (id) { return id.endsWith("w") && seen.indexOf(id) < 0; });
      var changed = seen === null || ids.join(",") !== seen.join(",");
      var first = seen === null;
      seen = ids;
      if (!changed || (first && cards.dataset.ids === ev.data)) return;
      fetch("/approvals/cards", { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
        cards.innerHTML = html;
        cards.dataset.ids = ev.data;
      });
      if (fresh && "Notification" in window && Notification.permission === "granted") {
        new Notification("quiver: a call waits for your answer", { body: "Open the Approvals page to allow or deny it." });
      }
    });
  }
  if (page === "Tools") {
    var input = document.getElementById("filter");
    input.addEventListener("input", function () {
      var f = input.value.toLowerCase();
      document.querySelectorAll("#tools tbody tr").forEach(function (tr) {
        tr.hidden = f !== "" && tr.dataset.filter.toLowerCase().indexOf(f) < 0;
      });
    });
    if (document.querySelector(".flash")) {
      // The watcher applies a switch within a second: show it applied.
      setTimeout(function () { location.replace("/tools?q=" + encodeURIComponent(input.value)); }, 1200);
    }
  }
})();
