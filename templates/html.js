// Sorting, filtering and expandable rows for the operator table. Reads only data-* attributes and element state;
// never evaluates or inserts text from the report as HTML.
(function () {
  "use strict";
  var table = document.getElementById("ops");
  if (!table) { return; }
  var headers = Array.prototype.slice.call(table.querySelectorAll("th[data-key]"));
  var count = document.getElementById("shown-count");
  var filter = document.getElementById("filter");

  function bodies() { return Array.prototype.slice.call(table.tBodies); }

  function compare(key, numeric, direction) {
    return function (a, b) {
      var x = a.getAttribute("data-" + key), y = b.getAttribute("data-" + key), order;
      if (numeric) { order = parseFloat(x) - parseFloat(y); }
      else { order = x < y ? -1 : (x > y ? 1 : 0); }  // code-point order: the same on every machine
      if (direction === "descending") { order = -order; }
      // Ties keep report order (largest effort first), whichever way the column is sorted.
      return order || parseFloat(a.getAttribute("data-rank")) - parseFloat(b.getAttribute("data-rank"));
    };
  }

  function sortBy(th) {
    var numeric = th.getAttribute("data-type") === "num";
    var current = th.getAttribute("aria-sort");
    // First click: numbers largest first (effort, risk), text A to Z; further clicks flip.
    var direction = current ? (current === "ascending" ? "descending" : "ascending") : (numeric ? "descending" : "ascending");
    headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", direction);
    bodies().sort(compare(th.getAttribute("data-key"), numeric, direction)).forEach(function (b) { table.appendChild(b); });
  }

  headers.forEach(function (th) {
    th.tabIndex = 0;
    th.addEventListener("click", function () { sortBy(th); });
    th.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sortBy(th); }
    });
  });

  function applyFilter() {
    var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean), shown = 0, all = bodies();
    all.forEach(function (b) {
      var text = b.getAttribute("data-search");
      var match = words.every(function (w) { return text.indexOf(w) !== -1; });
      b.hidden = !match;
      if (match) { shown += 1; }
    });
    var format = count.getAttribute("data-format") || "{shown} of {all} operator types";
    count.textContent = format.replace("{shown}", shown).replace("{all}", all.length);
  }
  if (filter) { filter.addEventListener("input", applyFilter); }

  table.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button.toggle") : null;
    if (!button) { return; }
    var detail = document.getElementById(button.getAttribute("aria-controls"));
    var open = button.getAttribute("aria-expanded") === "true";
    button.setAttribute("aria-expanded", open ? "false" : "true");
    detail.hidden = open;
  });
}());
