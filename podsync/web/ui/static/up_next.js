// podsync: Up next's rows can be dragged to a new place. The move is the page's
// own "move" form, sent with fetch (`before`: the row it now stands before, ""
// for last); without this file the Move up / Move down / Play next buttons do
// the same with a page load each.
(function () {
  "use strict";
  var list = document.querySelector("ol.queue");
  if (!list) {
    return;
  }
  var hint = document.querySelector(".drag-hint");
  if (hint) {
    hint.hidden = false;
  }
  var csrf = list.getAttribute("data-csrf");
  var dragged = null;

  function rowOf(node) {
    while (node && node !== list) {
      if (node.tagName === "LI") {
        return node;
      }
      node = node.parentNode;
    }
    return null;
  }

  function send(row) {
    var next = row.nextElementSibling;
    var body = new URLSearchParams();
    body.set("csrf", csrf);
    body.set("episode", row.getAttribute("data-ref"));
    body.set("before", next ? next.getAttribute("data-ref") : "");
    body.set("script", "yes");
    fetch("/ui/up-next/move", {
      method: "POST",
      body: body,
      credentials: "same-origin",
    }).then(function (response) {
      if (!response.ok) {
        window.location.reload();
      }
    }, function () {
      window.location.reload();
    });
  }

  list.addEventListener("dragstart", function (event) {
    dragged = rowOf(event.target);
    if (dragged) {
      dragged.classList.add("dragging");
      event.dataTransfer.effectAllowed = "move";
      event.dataTransfer.setData("text/plain", dragged.getAttribute("data-ref"));
    }
  });
  list.addEventListener("dragover", function (event) {
    var over = rowOf(event.target);
    if (!dragged || !over || over === dragged) {
      return;
    }
    event.preventDefault();
    var box = over.getBoundingClientRect();
    var after = event.clientY > box.top + box.height / 2;
    list.insertBefore(dragged, after ? over.nextElementSibling : over);
  });
  list.addEventListener("drop", function (event) {
    event.preventDefault();
  });
  list.addEventListener("dragend", function () {
    if (dragged) {
      dragged.classList.remove("dragging");
      send(dragged);
      dragged = null;
    }
  });
})();
