// Fixes to the themes' own scripts, each small enough to drop when upstream fixes its cause.
// tests/site/test_navigation.py and tests/site/test_theme_fixes.py check each one.
(function () {
  "use strict";

  // 1. The drawer buttons. Workaround for pydata-sphinx-theme issue 2451 (open upstream;
  // 0.17.1 with sphinx-book-theme 1.3.0): every page has two .primary-toggle and two
  // .secondary-toggle buttons, the hidden ones of pydata-sphinx-theme's header and the visible
  // ones of sphinx-book-theme's article header, and both themes' scripts bind only
  // document.querySelector's first match, a hidden button: the visible buttons did nothing at
  // any width. A click on a toggle that is not the first of its kind is handed to the first
  // one, which the themes did bind. Once upstream binds every toggle or renders only one,
  // this changes nothing: the click still reaches exactly one bound button.
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

  // 2. A link to a section of this page closes the drawer it sits in, so the reader sees the
  // section (the theme leaves the drawer open over it; a link to another page loads it). The
  // drawer closes once the link has done its jump.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("dialog[id$='-sidebar-modal'][open] a[href^='#']");
    if (link) setTimeout(function () { link.closest("dialog").close(); }, 0);
  });

  // 3. Dropdown bars (a solution's "Solution to Exercise N"). sphinx-togglebutton 0.4.5's click
  // handler knows the bar itself, its button and two parts of the button's icon; a click on
  // anything else in the bar (a formula in the title, the icon's other parts) threw "button is
  // not defined" and opened nothing. Such a click is handed to the bar itself.
  document.addEventListener("click", function (event) {
    var bar = event.target.closest && event.target.closest(".admonition-title[data-button]");
    if (!bar || event.target === bar) return;
    event.stopPropagation();
    if (event.target.closest("a")) return;  // a link in the bar goes where it says
    bar.click();
  }, true);

  // 4. Search results: Sphinx makes each snippet from the text of the page's whole main
  // area, in which KaTeX writes every formula three times (its MathML, the TeX source inside
  // it, and the HTML drawn on screen: "(12,0)(12, 0)(12,0)"), and which holds the download
  // menu, the page's contents list twice (the sidebar's and the theme's print-only copy) and
  // the links to the previous and next pages: a snippet often quoted "Contents ..." instead
  // of the text. The snippet reads the article's text, each formula once, as its MathML, with
  // the two signs MathML draws but does not write: a root's and a fraction's bar.
  var NOT_THE_TEXT = ".katex-html, .katex annotation, .bd-header-article, .onlyprint, .bd-sidebar-secondary, .prev-next-area";
  if (typeof Search === "object" && typeof Search.htmlToText === "function") {
    var htmlToText = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      var page = new DOMParser().parseFromString(htmlString, "text/html");
      page.querySelectorAll(NOT_THE_TEXT).forEach(function (el) { el.remove(); });
      page.querySelectorAll("msqrt").forEach(function (el) { el.prepend("√"); });
      page.querySelectorAll("mfrac").forEach(function (el) {
        if (el.children.length === 2) el.children[0].after("/");
      });
      return htmlToText(page.documentElement.outerHTML, anchor);
    };
  }

  // 5. Display equations wider than the column (on a phone): KaTeX's box scrolls sideways,
  // and with a phone's hidden scrollbars nothing showed that a formula went on past the edge.
  // The box says where more of it lies (data-scroll: "right", "left" or "both"), and
  // book-site.css draws a shadow on that edge.
  function markScroll(box) {
    var more = box.scrollWidth - box.clientWidth;
    var left = more > 1 && box.scrollLeft > 1;
    var right = more > 1 && box.scrollLeft < more - 1;
    var state = left && right ? "both" : left ? "left" : right ? "right" : "";
    if (state) box.dataset.scroll = state;
    else delete box.dataset.scroll;
  }
  var boxes = document.querySelectorAll(".katex-display > .katex > .katex-html");
  if (boxes.length) {
    var resized = typeof ResizeObserver === "function" && new ResizeObserver(function (entries) {
      entries.forEach(function (entry) { markScroll(entry.target); });
    });
    boxes.forEach(function (box) {
      markScroll(box);
      box.addEventListener("scroll", function () { markScroll(box); }, { passive: true });
      if (resized) resized.observe(box);
    });
    if (document.fonts) document.fonts.ready.then(function () { boxes.forEach(markScroll); });
  }
})();
