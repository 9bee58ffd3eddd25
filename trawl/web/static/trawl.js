// trawl's page works without this script; it only keeps the activity's live part current and
// says so plainly when the browser cannot play a file.
(function () {
  "use strict";
  var REFRESH_MS = 3000;

  function refresh(box) {
    var url = box.getAttribute("data-live");
    function tick() {
      // A form being used is not replaced under the person's hand.
      if (box.contains(document.activeElement) && document.activeElement.tagName === "BUTTON") {
        return setTimeout(tick, REFRESH_MS);
      }
      fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (answer) { return answer.ok ? answer.text() : null; })
        .then(function (html) { if (html !== null) { box.innerHTML = html; } })
        .catch(function () {})
        .then(function () { setTimeout(tick, REFRESH_MS); });
    }
    setTimeout(tick, REFRESH_MS);
  }

  function watchPlayback(media) {
    var note = document.getElementById("playnote");
    media.addEventListener("error", function () { if (note) { note.hidden = false; } });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("live");
    if (box) { refresh(box); }
    var media = document.getElementById("media");
    if (media && (media.tagName === "VIDEO" || media.tagName === "AUDIO")) { watchPlayback(media); }
  });
})();
