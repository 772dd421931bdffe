// podsync: the mini-player. One <audio> in a bar at the bottom of every page, kept
// across page changes by htmx (hx-boost swaps the page, hx-preserve keeps the bar).
// It writes where the person got to as a play action of the device "Web browser",
// one per listening session (play to pause, the end or a jump), updated every 30 s
// while it plays, when it pauses, at the end and when the page is left.
// Any link a[data-play="<episode id>"] starts that episode here, at the synced
// position; a[data-seek] (times in show notes, chapters) seeks. Keys: Space plays or
// pauses, the arrows go back 15 s and forward 30 s. Every page works without this
// file: each episode's page has the browser's own player.
(function () {
  "use strict";
  var EVERY = 30000;
  var BACK = 15;
  var AHEAD = 30;
  var bar = null;
  var audio = null;
  var current = null; // player.json of the episode loaded
  var started = null; // where the listening session began (seconds)
  var session = null; // its token: the server updates the session's one play action
  var last = 0; // the latest position seen while playing
  var timer = null;
  var pendingSeek = null; // where to go once the file's length is known
  var dragging = false;

  function $(name) {
    return bar.querySelector("[data-pb-" + name + "]");
  }

  function clock(seconds) {
    seconds = Math.max(0, Math.floor(seconds || 0));
    var h = Math.floor(seconds / 3600);
    var m = Math.floor((seconds % 3600) / 60);
    var s = seconds % 60;
    var mm = h ? (m < 10 ? "0" + m : String(m)) : String(m);
    return (h ? h + ":" : "") + mm + ":" + (s < 10 ? "0" + s : String(s));
  }

  function total() {
    var d = audio.duration;
    return isFinite(d) && d > 0 ? Math.round(d) : (current && current.total) || 0;
  }

  // The episode page's own status line, when the page is that episode's.
  function pageOf(ref) {
    var box = document.getElementById("player");
    return box && box.getAttribute("data-ref") === ref ? box : null;
  }

  function say(text) {
    $("status").textContent = text;
    var status = current && pageOf(current.ref) ? document.getElementById("player-status") : null;
    if (status) {
      status.textContent = text;
    }
  }

  function showState(ref, body) {
    // "Your state" on the episode's page, as the server now has it.
    var dd = document.getElementById("episode-state");
    if (!dd || dd.getAttribute("data-ref") !== ref) {
      return;
    }
    while (dd.firstChild) {
      dd.removeChild(dd.firstChild);
    }
    var tag = document.createElement("span");
    tag.className = "action tag-" + (body.key === "not_played" ? "other" : "play");
    tag.textContent = body.state;
    dd.appendChild(tag);
    if (body.progress !== null && body.progress !== undefined) {
      dd.appendChild(document.createTextNode(" " + body.text));
    }
    var when = document.createElement("span");
    when.className = "muted small";
    when.textContent = " \u00b7 " + (body.device ? body.device + ", " : "") + body.at;
    dd.appendChild(when);
    if (body.progress !== null && body.progress !== undefined) {
      var bar = document.createElement("progress");
      bar.max = body.total;
      bar.value = body.position;
      bar.setAttribute("aria-label", "Played " + body.progress + "%");
      bar.textContent = body.progress + "%";
      dd.appendChild(bar);
    }
  }

  function post(url, fields) {
    var body = new URLSearchParams();
    body.set("csrf", bar.getAttribute("data-csrf"));
    Object.keys(fields).forEach(function (name) {
      body.set(name, String(fields[name]));
    });
    return fetch(url, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: {Accept: "application/json"}
    });
  }

  function answered(ref, response) {
    return response
      .json()
      .catch(function () {
        return {saved: false};
      })
      .then(function (body) {
        if (body.saved) {
          if (current && current.ref === ref && body.episode && body.episode !== ref) {
            current.ref = body.episode; // its own id, once it has one
          }
          say("Position saved " + body.at + " (" + body.state.toLowerCase() + ").");
          showState(body.episode || ref, body);
        } else if (response.status === 403) {
          say("Position not saved: your session has ended or this page is old. Reload it (and sign in).");
        } else {
          say("Position not saved: " + (body.message || "the server answered " + response.status + "."));
        }
      });
  }

  // A listening session runs from play to pause, the end or a jump; each of its
  // saves sends the token made when it began, and the server updates the one play
  // action of the session (started where it began, position where it is).
  function newSession() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    session = Array.prototype.map
      .call(bytes, function (b) {
        return (b < 16 ? "0" : "") + b.toString(16);
      })
      .join("");
  }

  // The session so far, from `started` to `position`.
  function send(position, leaving) {
    var length = total();
    if (!current || started === null || !length) {
      return;
    }
    var from = Math.floor(started);
    var to = Math.min(Math.floor(position), length);
    if (to <= from && to < length) {
      return; // nothing played since the session began
    }
    var ref = current.ref;
    var url = "/ui/episodes/" + encodeURIComponent(ref) + "/progress";
    var fields = {started: from, position: to, total: length, session: session};
    if (leaving && navigator.sendBeacon) {
      var body = new URLSearchParams();
      body.set("csrf", bar.getAttribute("data-csrf"));
      Object.keys(fields).forEach(function (name) {
        body.set(name, String(fields[name]));
      });
      navigator.sendBeacon(url, body);
      return;
    }
    post(url, fields)
      .then(function (response) {
        return answered(ref, response);
      })
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

  function showTime() {
    var length = total();
    var seek = $("seek");
    if (!dragging) {
      seek.max = String(length || 0);
      seek.value = String(Math.floor(audio.currentTime || 0));
    }
    seek.setAttribute("aria-valuetext", clock(audio.currentTime) + " of " + clock(length));
    $("time").textContent = clock(audio.currentTime) + " / " + clock(length);
  }

  function showPlaying() {
    var toggle = $("toggle");
    toggle.textContent = audio.paused ? "Play" : "Pause";
    toggle.setAttribute("aria-label", (audio.paused ? "Play" : "Pause") + (current ? ": " + current.title : ""));
    if ("mediaSession" in navigator) {
      navigator.mediaSession.playbackState = audio.paused ? "paused" : "playing";
    }
  }

  function mediaSession() {
    if (!("mediaSession" in navigator) || !current) {
      return;
    }
    var art = current.artwork ? [{src: new URL(current.artwork, location.href).href}] : [];
    try {
      navigator.mediaSession.metadata = new MediaMetadata({
        title: current.title,
        artist: current.podcast,
        album: current.podcast,
        artwork: art
      });
    } catch (e) {
      return;
    }
    var handlers = {
      play: function () { audio.play(); },
      pause: function () { audio.pause(); },
      seekbackward: function (d) { skip(-((d && d.seekOffset) || BACK)); },
      seekforward: function (d) { skip((d && d.seekOffset) || AHEAD); },
      seekto: function (d) { if (d && isFinite(d.seekTime)) { seekTo(d.seekTime); } }
    };
    Object.keys(handlers).forEach(function (name) {
      try {
        navigator.mediaSession.setActionHandler(name, handlers[name]);
      } catch (e) {
        // a browser that does not know this action
      }
    });
  }

  function skip(by) {
    if (!current) {
      return;
    }
    seekTo((audio.currentTime || 0) + by);
  }

  function seekTo(at) {
    var length = total();
    at = Math.max(0, length ? Math.min(at, length - 0.5) : at);
    if (audio.readyState < 1) {
      pendingSeek = at;
      return;
    }
    audio.currentTime = at;
    showTime();
  }

  // Load an episode (player.json's answer) into the bar; play it when asked.
  function load(info, play, at) {
    if (current && current.ref === info.ref && audio.getAttribute("src")) {
      if (at !== undefined && at !== null) {
        seekTo(at);
      }
      if (play) {
        audio.play();
      }
      return;
    }
    if (current && !audio.paused) {
      send(audio.currentTime, false); // what was played of the one before
    }
    stopTimer();
    started = null;
    current = info;
    remember(info.ref);
    bar.hidden = false;
    document.body.classList.add("with-player");
    $("title").textContent = info.title;
    $("podcast").textContent = info.podcast;
    $("open").setAttribute("href", info.page);
    if (window.htmx) {
      window.htmx.process($("open")); // htmx boosts a link by its address when it saw it
    }
    $("initial").textContent = (info.podcast || "?").slice(0, 1);
    var img = $("art");
    if (info.artwork) {
      img.src = info.artwork;
      img.hidden = false;
    } else {
      img.removeAttribute("src");
      img.hidden = true;
    }
    var speed = $("speed");
    speed.value = String(info.speed || 1);
    if (speed.value === "") {
      speed.value = "1";
    }
    var position = at !== undefined && at !== null ? at : info.position || 0;
    pendingSeek = position > 0 && (!info.total || position < info.total - 1) ? position : null;
    audio.src = info.audio;
    audio.playbackRate = Number(speed.value) || 1;
    audio.defaultPlaybackRate = audio.playbackRate;
    say(
      (pendingSeek ? "It starts where you stopped, at " + clock(pendingSeek) + ". " : "") +
        "Your position is saved as you listen (device \u201cWeb browser\u201d): every 30 seconds, when you pause and at the end."
    );
    showPlaying();
    showTime();
    mediaSession();
    if (play) {
      audio.play().catch(function () {
        say("The browser did not start playing: press Play.");
      });
    }
  }

  // The episode in the bar, for this tab only: a full page load (a reload, a page
  // outside htmx) shows it again, paused where the server says the person is.
  function remember(ref) {
    try {
      sessionStorage.setItem("podsync-player", ref);
    } catch (e) {
      // storage refused: the bar starts empty after a full load
    }
  }

  function remembered() {
    try {
      return sessionStorage.getItem("podsync-player");
    } catch (e) {
      return null;
    }
  }

  function fetchInfo(url) {
    return fetch(url, {credentials: "same-origin", headers: {Accept: "application/json"}}).then(
      function (response) {
        if (response.status !== 200) {
          return null;
        }
        return response.json();
      }
    );
  }

  function playRef(ref, at) {
    if (current && current.ref === ref) {
      load(current, true, at);
      return;
    }
    fetchInfo("/ui/episodes/" + encodeURIComponent(ref) + "/player.json").then(function (info) {
      if (info && info.audio) {
        load(info, true, at);
      } else {
        location.href = "/ui/episodes/" + encodeURIComponent(ref);
      }
    });
  }

  function next() {
    if (!current) {
      return;
    }
    // The next episode of the person's queue, when they have autoplay on (204 or
    // 404: nothing next).
    fetchInfo("/ui/up-next/next?after=" + encodeURIComponent(current.ref))
      .then(function (info) {
        if (info && info.audio) {
          load(info, true);
        }
      })
      .catch(function () {});
  }

  function typing(target) {
    if (!target || !target.tagName) {
      return false;
    }
    var tag = target.tagName.toLowerCase();
    return (
      tag === "input" || tag === "textarea" || tag === "select" || tag === "button" ||
      tag === "summary" || target.isContentEditable
    );
  }

  function bind() {
    // Made here, not in the page: without script the episode page's own player is
    // the only one.
    audio = document.createElement("audio");
    audio.setAttribute("preload", "metadata");
    audio.setAttribute("data-pb-audio", "");
    bar.querySelector(".pb-inner").appendChild(audio);
    $("toggle").addEventListener("click", function () {
      if (!current) {
        return;
      }
      if (audio.paused) {
        audio.play();
      } else {
        audio.pause();
      }
    });
    Array.prototype.forEach.call(bar.querySelectorAll("[data-pb-skip]"), function (button) {
      button.addEventListener("click", function () {
        skip(Number(button.getAttribute("data-pb-skip")));
      });
    });
    var seek = $("seek");
    seek.addEventListener("input", function () {
      dragging = true;
      $("time").textContent = clock(Number(seek.value)) + " / " + clock(total());
    });
    seek.addEventListener("change", function () {
      dragging = false;
      seekTo(Number(seek.value));
    });
    $("speed").addEventListener("change", function () {
      var value = Number($("speed").value) || 1;
      audio.playbackRate = value;
      audio.defaultPlaybackRate = value;
      if (!current) {
        return;
      }
      current.speed = value;
      post("/ui/episodes/" + encodeURIComponent(current.ref) + "/speed", {speed: value})
        .then(function (response) {
          if (response.status !== 200) {
            say("Speed not kept: the server answered " + response.status + ".");
          }
        })
        .catch(function () {
          say("Speed not kept: the server could not be reached.");
        });
    });

    audio.addEventListener("loadedmetadata", function () {
      if (pendingSeek !== null) {
        audio.currentTime = pendingSeek;
        pendingSeek = null;
      }
      showTime();
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
      showPlaying();
    });
    audio.addEventListener("timeupdate", function () {
      if (!audio.paused && !audio.seeking) {
        last = audio.currentTime;
      }
      showTime();
    });
    audio.addEventListener("seeking", function () {
      // A jump ends the session: what was played up to it is saved, and a new one
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
      showTime();
    });
    audio.addEventListener("pause", function () {
      stopTimer();
      showPlaying();
      if (!audio.ended) {
        send(audio.currentTime, false);
        started = null;
      }
    });
    audio.addEventListener("ended", function () {
      stopTimer();
      send(total(), false);
      started = null;
      showPlaying();
      next();
    });
  }

  // Chapters behind a Podcasting 2.0 address: this server fetches them, the page
  // lists them as it lists those its feed gives inline.
  function chapters() {
    var box = document.getElementById("chapters");
    if (!box || box.hasAttribute("data-loaded")) {
      return;
    }
    box.setAttribute("data-loaded", "");
    var ref = box.getAttribute("data-episode");
    fetchInfo(box.getAttribute("data-src")).then(function (found) {
      var list = box.querySelector("ol");
      if (!found || !found.chapters || !found.chapters.length || !list) {
        return;
      }
      found.chapters.forEach(function (chapter) {
        var item = document.createElement("li");
        var link = document.createElement("a");
        link.href = "/ui/episodes/" + encodeURIComponent(ref) + "?t=" + chapter.start;
        link.setAttribute("data-seek", String(chapter.start));
        link.setAttribute("data-episode", ref);
        var at = document.createElement("span");
        at.className = "chapter-time";
        at.textContent = clock(chapter.start);
        link.appendChild(at);
        link.appendChild(document.createTextNode(" " + chapter.title));
        item.appendChild(link);
        list.appendChild(item);
      });
      box.hidden = false;
    });
  }

  // The page in view (the first, or one htmx swapped in): its episode player gives
  // way to the bar.
  // On a phone the navigation is one row that scrolls sideways: show the page's item.
  function navInView() {
    var list = document.querySelector('nav[aria-label="Main"] ul');
    var item = list && list.querySelector('[aria-current="page"]');
    if (item && list.scrollWidth > list.clientWidth) {
      var left = item.getBoundingClientRect().left - list.getBoundingClientRect().left;
      list.scrollLeft = Math.max(0, list.scrollLeft + left - (list.clientWidth - item.offsetWidth) / 2);
    }
  }

  function page() {
    navInView();
    var found = document.getElementById("player-bar");
    if (!found) {
      bar = null;
      return;
    }
    if (found !== bar) {
      bar = found;
      if (!bar.hasAttribute("data-bound")) {
        bar.setAttribute("data-bound", "");
        bind();
      }
      audio = $("audio");
    }
    chapters();
    var box = document.getElementById("player");
    if (!box) {
      var saved = remembered();
      if (!current && saved) {
        fetchInfo("/ui/episodes/" + encodeURIComponent(saved) + "/player.json").then(function (info) {
          if (info && info.audio && !current) {
            load(info, false);
          }
        });
      }
      return;
    }
    var own = box.querySelector("audio");
    if (own) {
      own.pause();
      own.removeAttribute("src");
      own.load();
      own.parentNode.removeChild(own);
    }
    Array.prototype.forEach.call(document.querySelectorAll(".play-here, details.keys"), function (el) {
      el.hidden = false;
    });
    var ref = box.getAttribute("data-ref");
    if (current && current.ref === ref) {
      say($("status").textContent);
      return;
    }
    if (current && !audio.paused) {
      return; // another episode plays: this page's Play button starts this one
    }
    fetchInfo("/ui/episodes/" + encodeURIComponent(ref) + "/player.json").then(function (info) {
      if (info && info.audio && (!current || audio.paused)) {
        load(info, false);
      }
    });
  }

  document.addEventListener(
    "click",
    function (event) {
      if (!bar || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) {
        return;
      }
      var link = event.target.closest && event.target.closest("a[data-play], a[data-seek]");
      if (!link) {
        return;
      }
      // Before htmx sees the click: this plays, it does not open a page.
      event.preventDefault();
      event.stopPropagation();
      if (link.hasAttribute("data-play")) {
        playRef(link.getAttribute("data-play"));
      } else {
        playRef(link.getAttribute("data-episode"), Number(link.getAttribute("data-seek")));
      }
    },
    true
  );

  document.addEventListener("keydown", function (event) {
    if (!bar || !current || event.defaultPrevented || event.metaKey || event.ctrlKey || event.altKey || typing(event.target)) {
      return;
    }
    if (event.key === " " || event.key === "Spacebar") {
      event.preventDefault();
      if (audio.paused) {
        audio.play();
      } else {
        audio.pause();
      }
    } else if (event.key === "ArrowLeft") {
      event.preventDefault();
      skip(-BACK);
    } else if (event.key === "ArrowRight") {
      event.preventDefault();
      skip(AHEAD);
    }
  });

  window.addEventListener("pagehide", function () {
    if (audio && !audio.paused && started !== null) {
      send(audio.currentTime, true);
    }
  });

  // Stay in place: a mark, dismiss or queue form comes back to its row (`back`
  // ends in "#<row id>"), but a page swapped in by htmx loses the address's
  // fragment on the way (the request follows the redirect). Remember it when the
  // form is sent and go to that row once the new page is in.
  var rowAfterSwap = null;
  document.addEventListener(
    "submit",
    function (event) {
      var back = event.target.querySelector && event.target.querySelector("input[name=back]");
      var cut = back ? back.value.indexOf("#") : -1;
      rowAfterSwap = cut >= 0 ? back.value.slice(cut + 1) : null;
    },
    true
  );

  function backToRow() {
    if (!rowAfterSwap) {
      return;
    }
    var row = document.getElementById(rowAfterSwap);
    if (row) {
      history.replaceState(history.state, "", location.pathname + location.search + "#" + rowAfterSwap);
      row.scrollIntoView({block: "center"});
    }
    rowAfterSwap = null;
  }

  document.addEventListener("htmx:afterSettle", function (event) {
    if (event.target === document.body || (event.detail && event.detail.boosted)) {
      page();
      backToRow();
    }
  });
  document.addEventListener("htmx:historyRestore", page);
  page();
})();
