// trawl's page works without this script; it only keeps the activity's live part current, says
// so plainly when the browser cannot play a file, keeps this browser's place in what it plays,
// seeks the player from chapters and danmaku in place (their links otherwise open the page again
// at that second), and flies the danmaku over the video when asked. Text is inserted as text.
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

  // ?t=SECONDS: the player starts there (the media fragment #t= of its source says so too; this
  // makes sure where a browser ignored it).
  function startAt(media) {
    var start = parseFloat(media.getAttribute("data-start") || "");
    if (!(start > 0)) { return; }
    function go() { if (start < media.duration && Math.abs(media.currentTime - start) > 0.5) { media.currentTime = start; } }
    if (media.readyState >= 1) { go(); } else { media.addEventListener("loadedmetadata", go, { once: true }); }
  }

  // A link with data-seek (a chapter, a danmaku) moves the player there and plays.
  function seekLinks(media) {
    document.addEventListener("click", function (event) {
      var link = event.target.closest ? event.target.closest("a[data-seek]") : null;
      if (!link) { return; }
      var at = parseFloat(link.getAttribute("data-seek"));
      if (!isFinite(at) || at < 0) { return; }
      event.preventDefault();
      media.currentTime = at;
      if (media.paused) { media.play().catch(function () {}); }
    });
    var chapters = document.querySelectorAll("#chapters li[data-t]");
    if (!chapters.length) { return; }
    media.addEventListener("timeupdate", function () {
      var current = null;
      for (var i = 0; i < chapters.length; i++) {
        if (parseFloat(chapters[i].getAttribute("data-t")) <= media.currentTime + 0.05) { current = chapters[i]; }
      }
      for (var j = 0; j < chapters.length; j++) { chapters[j].classList.toggle("current", chapters[j] === current); }
    });
  }

  // The danmaku listed beside the player, flown over the video from right to left while it plays
  // (when the button asks for it): each in the lane free the longest (none free: left out), in its colour, as text.
  function danmakuOverlay(media) {
    var button = document.getElementById("danmaku-toggle"), layer = document.getElementById("danmaku-layer");
    var listed = document.querySelectorAll("#danmaku li[data-t]");
    if (!button || !layer || !listed.length) { return; }
    var LANES = 12, GAP_S = 1.2, bullets = [], next = 0, lanes = [], on = false;
    for (var i = 0; i < listed.length; i++) {
      var text = listed[i].querySelector(".text");
      bullets.push({ t: parseFloat(listed[i].getAttribute("data-t")), text: text ? text.textContent : "",
                     color: listed[i].getAttribute("data-color") || "" });
    }
    function firstFrom(seconds) {  // the first bullet at or after seconds (they are in time)
      var low = 0, high = bullets.length;
      while (low < high) { var mid = (low + high) >> 1; if (bullets[mid].t < seconds) { low = mid + 1; } else { high = mid; } }
      return low;
    }
    function reset() {
      layer.textContent = "";
      lanes = [];
      for (var l = 0; l < LANES; l++) { lanes.push(-Infinity); }
      next = firstFrom(media.currentTime);
    }
    function fly(bullet, now) {
      var lane = 0;
      for (var l = 1; l < LANES; l++) { if (lanes[l] < lanes[lane]) { lane = l; } }
      if (lanes[lane] > now) { return; }  // every lane busy: left out rather than written over another
      lanes[lane] = now + GAP_S;
      var span = document.createElement("span");
      span.className = "bullet";
      span.textContent = bullet.text;
      if (/^#[0-9a-f]{6}$/.test(bullet.color)) { span.style.color = bullet.color; }
      span.style.top = (lane * 100 / LANES) + "%";
      span.addEventListener("animationend", function () { span.remove(); });
      layer.appendChild(span);
    }
    function tick() {
      if (!on) { return; }
      var now = media.currentTime;
      while (next < bullets.length && bullets[next].t <= now) {
        if (bullets[next].t > now - 1) { fly(bullets[next], now); }  // one long past is not flown late
        next++;
      }
    }
    function paused() { layer.classList.toggle("paused", media.paused); }
    button.addEventListener("click", function () {
      on = !on;
      button.setAttribute("aria-pressed", on ? "true" : "false");
      layer.hidden = !on;
      reset();
      paused();
    });
    media.addEventListener("timeupdate", tick);
    media.addEventListener("seeked", function () { if (on) { reset(); } });
    media.addEventListener("play", paused);
    media.addEventListener("pause", paused);
    button.hidden = false;
  }

  function watchPlayback(media) {
    var note = document.getElementById("playnote");
    media.addEventListener("error", function () { if (note) { note.hidden = false; } });
  }

  // This browser's place in a video or audio: saved every 10 s of playing, on pause and at the
  // end (then it counts as watched); a page opened again goes on from there.
  function keepPlace(media) {
    var url = media.getAttribute("data-viewing"), token = media.getAttribute("data-form-token");
    if (!url || !token) { return; }
    var resume = parseFloat(media.getAttribute("data-resume") || "0"), saved = 0;
    function save(fields) {
      var body = new URLSearchParams(fields);
      body.set("form_token", token);
      fetch(url, { method: "POST", credentials: "same-origin", body: body, redirect: "manual" }).catch(function () {});
    }
    function goOn() { if (resume < media.duration - 1) { media.currentTime = resume; } }
    if (resume > 0) {
      // its metadata may be there already (a cached file): then at once
      if (media.readyState >= 1) { goOn(); } else { media.addEventListener("loadedmetadata", goOn, { once: true }); }
    }
    media.addEventListener("timeupdate", function () {
      if (Math.abs(media.currentTime - saved) >= 10) { saved = media.currentTime; save({ position: saved }); }
    });
    media.addEventListener("pause", function () {
      if (!media.ended) { saved = media.currentTime; save({ position: saved }); }
    });
    media.addEventListener("ended", function () { save({ position: 0, watched: "1" }); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("live");
    if (box) { refresh(box); }
    var media = document.getElementById("media");
    if (media && (media.tagName === "VIDEO" || media.tagName === "AUDIO")) {
      watchPlayback(media); startAt(media); keepPlace(media); seekLinks(media); danmakuOverlay(media);
    }
  });
})();
