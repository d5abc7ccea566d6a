// Sortable tables: click a header to sort by that column (again to reverse). Cells sort by
// their data-v attribute when they have one (numbers), else by their text; empty last.
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
      var numeric = th.getAttribute("data-type") === "number";
      function key(row) {
        var cell = row.cells[col];
        var v = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent;
        if (v === "") { return null; }
        return numeric ? parseFloat(v) : v.toLowerCase();
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null || y === null) { return (x === null) - (y === null); }
        return (x < y ? -1 : x > y ? 1 : 0) * dir;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
