// Polls the progress bars of running and queued jobs every two seconds until they finish; a report page's bar
// (data-reload-when-done, core/_report_state.html) reloads its page when its job is done, to show the figures.
(function () {
  var active = '[data-status="running"], [data-status="queued"]';
  function poll() {
    document.querySelectorAll(active).forEach(function (row) {
      var bar = row.querySelector("[data-progress-url]");
      if (!bar) { return; }
      fetch(bar.dataset.progressUrl, {credentials: "same-origin"}).then(function (r) { return r.json(); }).then(function (d) {
        bar.querySelector("span").style.width = d.percent + "%";
        if (bar.hasAttribute("aria-valuenow")) { bar.setAttribute("aria-valuenow", d.percent); }
        var small = bar.parentElement.querySelector("small");
        if (small) { small.textContent = d.percent + "%"; }
        var badge = row.querySelector("[data-badge]");
        if (badge && d.status !== "queued") {
          badge.textContent = d.status;
          badge.className = "badge " + (d.status === "stale" ? "failed" : d.status);
        }
        var message = row.querySelector("[data-message]");
        if (message && d.message) { message.textContent = d.message; }
        row.dataset.status = d.status;
        if (row.hasAttribute("data-reload-when-done") && d.status !== "running" && d.status !== "queued") {
          window.location.reload();
        }
      });
    });
  }
  if (document.querySelector(active)) { setInterval(poll, 2000); }
})();
