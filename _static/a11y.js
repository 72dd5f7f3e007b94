/* Accessibility mends for markup that the book's packages write and this repository cannot change.
 * - WCAG 2.1 SC 2.5.3 "Label in Name": pydata-sphinx-theme 0.17.1 and myst-nb 1.4.0 write a few controls
 *   whose aria-label differs from their visible text, so speech-input users cannot say what they see
 *   (axe-core: label-content-name-mismatch).
 * - docutils 0.21 writes citation lists whose entries are no list items (axe: aria-required-children).
 * It is the book's own file (Jupyter Book adds every .js under _static/ to every page); vendored
 * JavaScript never goes under _static/ (see TOOLCHAIN.md, P4).
 */
(function () {
  "use strict";

  // Search button: shows "Search Ctrl+K", is named "Search". Drop the aria-label so the name is what it
  // shows, and announce the shortcut the standard way too.
  function mendSearchButtons() {
    document.querySelectorAll(".search-button-field[aria-label]").forEach(function (button) {
      button.removeAttribute("aria-label");
      button.setAttribute("aria-keyshortcuts", "Control+K");
    });
  }

  // Colour-mode button: named "Color mode", but Font Awesome turns each icon's title (Light, Dark,
  // System Settings) into text inside it. The icons are decoration; the name says the mode instead.
  var MODE_NAMES = { light: "Light", dark: "Dark", auto: "System Settings" };

  function mendThemeSwitch() {
    document.querySelectorAll(".theme-switch-button").forEach(function (button) {
      button.querySelectorAll("svg, i").forEach(function (icon) {
        icon.setAttribute("aria-hidden", "true");
        icon.removeAttribute("aria-labelledby");
        icon.removeAttribute("title");
        icon.querySelectorAll("title").forEach(function (t) { t.remove(); });
      });
      var mode = document.documentElement.dataset.mode || "auto";
      button.setAttribute("aria-label", "Color mode: " + (MODE_NAMES[mode] || mode));
    });
  }

  // myst-nb's hidden code cells: <summary aria-label="Toggle hidden content"> shows "Show code cell
  // source". Without the aria-label the name is the visible text.
  function mendCellToggles() {
    document.querySelectorAll('details.hide > summary[aria-label="Toggle hidden content"]').forEach(
      function (summary) { summary.removeAttribute("aria-label"); });
  }

  // docutils 0.21 writes a citation list as role="list" whose entries have role="doc-biblioentry", a role
  // that DPUB-ARIA 1.1 deprecated and that is no list item, so the list has no items for assistive
  // technology (axe: aria-required-children, critical). They are list items.
  function mendCitationLists() {
    document.querySelectorAll('.citation-list[role="list"] > [role="doc-biblioentry"]').forEach(
      function (entry) { entry.setAttribute("role", "listitem"); });
  }

  function mendAll() {
    mendCitationLists();
    mendSearchButtons();
    mendThemeSwitch();
    mendCellToggles();
  }

  function start() {
    mendAll();
    // Font Awesome replaces the <i> icons with <svg> after this runs, and the theme changes data-mode
    // when the reader switches colours: mend again after either.
    var observer = new MutationObserver(function () {
      observer.disconnect();
      mendAll();
      observe();
    });
    function observe() {
      observer.observe(document.documentElement, { attributes: true, attributeFilter: ["data-mode"] });
      document.querySelectorAll(".theme-switch-button").forEach(function (button) {
        observer.observe(button, { childList: true, subtree: true });
      });
    }
    observe();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
