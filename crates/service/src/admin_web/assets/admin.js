// oncebot's operator page: refreshes the sections marked data-refresh every few seconds by
// fetching the same page and swapping them in. Plain JavaScript, no library, no build step; the
// page works without it (the forms are plain POSTs), it only stops refreshing by itself.
(function () {
  "use strict";
  var EVERY_MS = 4000;

  function refresh() {
    if (document.visibilityState !== "visible") return;
    // A relative URL: credentials in the address bar (user:pass@host) must not reach fetch().
    fetch(window.location.pathname + window.location.search, {
      credentials: "same-origin",
      headers: { "Accept": "text/html" },
      cache: "no-store"
    })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (text) {
        var fresh = new DOMParser().parseFromString(text, "text/html");
        document.querySelectorAll("[data-refresh]").forEach(function (old) {
          // Never pull a form away from under the operator's cursor.
          if (old.contains(document.activeElement)) return;
          var name = old.getAttribute("data-refresh");
          var next = fresh.querySelector('[data-refresh="' + name + '"]');
          if (next) old.replaceWith(document.importNode(next, true));
        });
        var stamp = document.getElementById("refreshed");
        var freshStamp = fresh.getElementById("refreshed");
        if (stamp && freshStamp) {
          stamp.textContent = freshStamp.textContent;
          stamp.classList.remove("stale");
        }
      })
      .catch(function () {
        var stamp = document.getElementById("refreshed");
        if (stamp) stamp.classList.add("stale");
      });
  }

  if (document.querySelector("[data-refresh]")) {
    window.setInterval(refresh, EVERY_MS);
  }
})();
