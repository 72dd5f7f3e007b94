// The ipywidgets HTML manager (1.0.6) typesets widget labels with the MathJax 2 call
// MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]). The book loads MathJax 3, which has no Hub,
// so that call throws and can stop a widget (and the plot inside it) from rendering.
// This file provides Hub.Queue on top of MathJax 3. tools/vendor_js.sh copies it into _vendor/vendor/.
(function () {
  function patch() {
    var mj = window.MathJax;
    if (!mj || mj.Hub || !mj.version) return;
    mj.Hub = {
      Queue: function (job) {
        var element = Array.isArray(job) ? job[2] : undefined;
        var ready = mj.startup && mj.startup.promise ? mj.startup.promise : Promise.resolve();
        ready.then(function () {
          if (element && mj.typesetPromise) return mj.typesetPromise([element]);
        }).catch(function (err) { console.warn("MathJax typeset of a widget label failed", err); });
      }
    };
  }
  // MathJax is loaded with `defer`, so it exists by DOMContentLoaded; the widgets render on `load`.
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", patch);
  } else {
    patch();
  }
})();
