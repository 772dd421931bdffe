// podsync: an episode page's player writes where the person got to, as a play
// action of the device "Web browser": every 30 s while it plays, when it pauses,
// when it ends, and when the page is left while it plays. A listening session (from
// play to pause, end, a jump or leaving) is one play action: each save sends the
// session's token, made when it began, and the server updates that play. The page
// works without this file (the player plays; the page says the position is not
// saved).
(function () {
  "use strict";
  var box = document.getElementById("player");
  var status = document.getElementById("player-status");
  if (!box || !status) {
    return;
  }
  var audio = box.querySelector("audio");
  var url = box.getAttribute("data-progress");
  var csrf = box.getAttribute("data-csrf");
  var start = Number(box.getAttribute("data-start")) || 0;
  var known = Number(box.getAttribute("data-total")) || 0;
  var device = box.getAttribute("data-device");
  var EVERY = 30000;
  var started = null; // where the listening session began (seconds)
  var session = null; // its token
  var last = 0; // the latest position seen while playing
  var timer = null;

  function say(text) {
    status.textContent = text;
  }

  say(
    (start ? "It starts where you stopped. " : "") +
      "Your position is saved as you listen (device \u201c" + device +
      "\u201d): every 30 seconds, when you pause and at the end."
  );

  function newSession() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    session = Array.prototype.map
      .call(bytes, function (b) {
        return (b < 16 ? "0" : "") + b.toString(16);
      })
      .join("");
  }

  function total() {
    var d = audio.duration;
    return isFinite(d) && d > 0 ? Math.round(d) : known;
  }

  function answered(response) {
    return response
      .json()
      .catch(function () {
        return {saved: false};
      })
      .then(function (body) {
        if (body.saved) {
          if (body.episode) {
            url = "/ui/episodes/" + body.episode + "/progress";
          }
          say("Position saved " + body.at + " (" + body.state.toLowerCase() + ").");
        } else if (response.status === 403) {
          say("Position not saved: your session has ended or this page is old. Reload it (and sign in).");
        } else {
          say("Position not saved: " + (body.message || "the server answered " + response.status + "."));
        }
      });
  }

  function send(position, leaving) {
    var length = total();
    if (started === null || !length) {
      return;
    }
    var from = Math.floor(started);
    var to = Math.min(Math.floor(position), length);
    if (to <= from && to < length) {
      return; // nothing played since the stretch began
    }
    var body = new URLSearchParams();
    body.set("csrf", csrf);
    body.set("started", String(from));
    body.set("position", String(to));
    body.set("total", String(length));
    body.set("session", session);
    if (leaving && navigator.sendBeacon) {
      navigator.sendBeacon(url, body);
      return;
    }
    fetch(url, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: {Accept: "application/json"}
    })
      .then(answered)
      .catch(function () {
        say("Position not saved: the server could not be reached. It is tried again in 30 seconds while this plays.");
      });
  }

  function stopTimer() {
    if (timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  }

  audio.addEventListener("loadedmetadata", function () {
    // The address's #t= starts it there already; this is for a browser that did not.
    if (start > 0 && audio.currentTime < 1 && start < total() - 1) {
      audio.currentTime = start;
    }
    start = 0;
  });
  audio.addEventListener("playing", function () {
    if (started === null) {
      started = audio.currentTime;
      last = started;
      newSession();
    }
    if (timer === null) {
      timer = setInterval(function () {
        if (!audio.paused) {
          send(audio.currentTime, false);
        }
      }, EVERY);
    }
  });
  audio.addEventListener("timeupdate", function () {
    if (!audio.paused && !audio.seeking) {
      last = audio.currentTime;
    }
  });
  audio.addEventListener("seeking", function () {
    // A jump ends the stretch: what was played up to it is saved, and a new one
    // begins where the jump lands (time jumped over is not time listened).
    if (started !== null && !audio.paused) {
      send(last, false);
    }
    started = null;
  });
  audio.addEventListener("seeked", function () {
    if (!audio.paused) {
      started = audio.currentTime;
      last = started;
      newSession();
    }
  });
  audio.addEventListener("pause", function () {
    stopTimer();
    if (!audio.ended) {
      send(audio.currentTime, false);
      started = null;
    }
  });
  audio.addEventListener("ended", function () {
    stopTimer();
    send(total(), false);
    started = null;
  });
  window.addEventListener("pagehide", function () {
    if (!audio.paused && started !== null) {
      send(audio.currentTime, true);
    }
  });
})();
