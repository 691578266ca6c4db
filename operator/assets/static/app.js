// The operator page's only script: live approval cards over server-sent
// events, a notification for a new card, and the tools filter as you type.
// Every action works without it (plain forms).
"use strict";
(function () {
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
