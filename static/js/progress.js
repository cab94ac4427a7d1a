// Polls running jobs' progress bars every two seconds until they finish.
(function () {
  function poll() {
    document.querySelectorAll('tr[data-status="running"] [data-progress-url]').forEach(function (bar) {
      fetch(bar.dataset.progressUrl, {credentials: "same-origin"}).then(function (r) { return r.json(); }).then(function (d) {
        bar.querySelector("span").style.width = d.percent + "%";
        var row = bar.closest("tr");
        row.dataset.status = d.status;
        var small = bar.parentElement.querySelector("small");
        if (small) { small.textContent = d.percent + "%"; }
      });
    });
  }
  if (document.querySelector('tr[data-status="running"]')) { setInterval(poll, 2000); }
})();
