// Behaviour that would otherwise be inline (the Content-Security-Policy allows no inline script or style):
// progress bars take their width from data-percent; a select with data-autosubmit submits its form.
(function () {
  document.querySelectorAll(".progress span[data-percent]").forEach(function (bar) {
    bar.style.width = bar.dataset.percent + "%";
  });
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
})();
// The header menu (a <details>, open in the HTML so it works without script) folds on a narrow screen;
// opening one group of the staff menu closes the others.
(function () {
  var menu = document.querySelector("details.menu");
  if (menu && window.matchMedia("(max-width: 800px)").matches) { menu.removeAttribute("open"); }
  var groups = document.querySelectorAll("details.navgroup");
  groups.forEach(function (group) {
    group.addEventListener("toggle", function () {
      if (!group.open) { return; }
      groups.forEach(function (other) { if (other !== group) { other.removeAttribute("open"); } });
    });
  });
  document.addEventListener("click", function (event) {
    groups.forEach(function (group) { if (!group.contains(event.target)) { group.removeAttribute("open"); } });
  });
})();
// A table that scrolls inside its card on a narrow screen can be scrolled from the keyboard (WCAG 2.1.1).
(function () {
  function mark() {
    document.querySelectorAll("main table, main .scroll").forEach(function (box) {
      if (box.scrollWidth > box.clientWidth + 1) {
        if (!box.hasAttribute("tabindex")) { box.setAttribute("tabindex", "0"); }
        if (box.tagName !== "TABLE" && !box.hasAttribute("aria-label") && !box.hasAttribute("role")) {
          box.setAttribute("role", "region");
          box.setAttribute("aria-label", "Table, scrolls sideways");
        }
      }
    });
  }
  mark();
  window.addEventListener("resize", mark);
})();
