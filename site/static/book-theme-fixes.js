// Workaround for pydata-sphinx-theme issue 2451 (open upstream; 0.17.1 with sphinx-book-theme
// 1.3.0): every page has two .primary-toggle and two .secondary-toggle buttons, the hidden
// ones of pydata-sphinx-theme's header and the visible ones of sphinx-book-theme's article
// header, and both themes' scripts bind only document.querySelector's first match, a hidden
// button. The visible buttons then did nothing at any width.
//
// A click on a toggle that is not the first of its kind is handed to the first one, which the
// themes did bind. Once upstream binds every toggle or renders only one, this changes nothing:
// the click still reaches exactly one bound button. tests/site/test_navigation.py taps the
// buttons at 390 and 1000 px and follows a link in each drawer.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest(".primary-toggle, .secondary-toggle");
    if (!button) return;
    var kind = button.classList.contains("primary-toggle") ? ".primary-toggle" : ".secondary-toggle";
    var bound = document.querySelector(kind);
    if (bound === button) return;
    event.preventDefault();
    event.stopPropagation();
    button.focus();  // the theme gives focus back to the element that had it when the drawer closes
    bound.click();
  }, true);

  // A link to a section of this page closes the drawer it sits in, so the reader sees the
  // section (the theme leaves the drawer open over it; a link to another page loads it).
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("dialog[id$='-sidebar-modal'][open] a[href^='#']");
    if (link) setTimeout(function () { link.closest("dialog").close(); }, 0);
  });
})();
