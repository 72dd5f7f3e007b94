// Accessible names for ipywidgets sliders in the built book. ipywidgets 8 draws a slider with noUiSlider, whose
// handle (role="slider", the element that takes keyboard focus) gets no accessible name: the visible
// description sits in a separate <label> that is not tied to it, so a screen reader announces an unnamed slider
// (axe: aria-input-field-name). This gives each handle the text of its visible label as aria-label (so the
// accessible name matches the visible label) and the readout as aria-valuetext (the setting, not an index).
// tools/vendor_js.sh copies it into _vendor/vendor/; _config.yml loads it on pages with widgets.
(function () {
  function name(root) {
    root.querySelectorAll(".widget-slider, .jupyter-widget-slider").forEach(function (widget) {
      var handle = widget.querySelector(".noUi-handle");
      var label = widget.querySelector(".widget-label");
      var readout = widget.querySelector(".widget-readout");
      if (!handle) return;
      var text = label ? label.textContent.trim() : "";
      if (text && handle.getAttribute("aria-label") !== text) handle.setAttribute("aria-label", text);
      var value = readout ? readout.textContent.trim() : "";
      if (value && handle.getAttribute("aria-valuetext") !== value) handle.setAttribute("aria-valuetext", value);
    });
  }
  var pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; name(document); });
  }
  function start() {
    name(document);
    new MutationObserver(schedule).observe(document.body, {childList: true, subtree: true, characterData: true});
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
