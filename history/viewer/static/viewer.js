// chat-outline's viewer: the one script its pages run (the Content-Security-Policy allows no
// other). It filters the thread list as you type, and opens a line of the tree in place: the
// line's two children are fetched from the server and drawn under it, its text beside. Every
// page works without it, through plain links.
"use strict";

function filterThreads(input) {
  const wanted = input.value.trim().toLowerCase();
  for (const row of document.querySelectorAll("#threads tbody tr[data-thread]")) {
    const text = (row.dataset.thread + "\n" + row.dataset.title).toLowerCase();
    row.hidden = wanted !== "" && !text.includes(wanted);
  }
}

async function openLine(tree, label, agent) {
  const thread = encodeURIComponent(tree.dataset.thread);
  const query = agent ? "?agent=" + encodeURIComponent(agent) : "";
  const answer = await fetch("/threads/" + thread + "/open/" + encodeURIComponent(label) + query);
  const zoom = document.getElementById("zoom");
  const parsed = document.createElement("template");
  parsed.innerHTML = await answer.text();
  const children = parsed.content.querySelector("svg.children");
  if (children) {
    for (const box of Array.from(children.querySelectorAll("a.box"))) {
      if (!tree.querySelector('a.box[data-label="' + box.dataset.label + '"]:not(.outline-row)')) {
        tree.appendChild(box);
      }
    }
    children.remove();
  }
  zoom.replaceChildren(...parsed.content.childNodes);
  for (const box of tree.querySelectorAll("a.box.opened")) box.classList.remove("opened");
  for (const box of tree.querySelectorAll('a.box[data-label="' + label + '"]')) {
    box.classList.add("opened");
  }
  zoom.dataset.opened = answer.ok ? label : "";
}

document.addEventListener("DOMContentLoaded", () => {
  const match = document.getElementById("match");
  if (match) {
    match.addEventListener("input", () => filterThreads(match));
    filterThreads(match);
  }
  const tree = document.getElementById("tree");
  if (!tree) return;
  document.addEventListener("click", (event) => {
    const link = event.target.closest("a.box, a.open");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    openLine(tree, link.dataset.label, link.dataset.agent || "");
  });
});
