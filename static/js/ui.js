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
