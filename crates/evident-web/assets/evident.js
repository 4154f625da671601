// evident's page works without this file. With it: the state filter applies on change,
// times show the reader's local time on hover, and hashes get a copy button.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("select[data-autosubmit]").forEach(function (s) {
    s.addEventListener("change", function () { if (s.form) s.form.submit(); });
  });
  document.querySelectorAll("time[datetime]").forEach(function (t) {
    var d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d.getTime())) t.title = d.toLocaleString();
  });
  if (navigator.clipboard) {
    document.querySelectorAll("code.hash").forEach(function (c) {
      var b = document.createElement("button");
      b.type = "button";
      b.className = "copy";
      b.textContent = "copy";
      b.addEventListener("click", function () {
        navigator.clipboard.writeText(c.textContent).then(function () { b.textContent = "copied"; });
      });
      c.after(b);
    });
  }
});
