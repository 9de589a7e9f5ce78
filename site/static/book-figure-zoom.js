// Figures at full size. A figure wider than the text column is drawn scaled down to fit it,
// and its text with it: on a 390 px phone the smallest labels of the wider figures were 4-5 px
// tall, on a laptop 8. A tap or click on such a figure, or its "Full size" button, opens it
// at its own size (its smallest text 10.7 px or more) in a dialog that scrolls sideways where
// the screen is narrower; Escape, the close button or a tap beside it closes the dialog.
// tests/site/test_figures.py measures the text both ways.
(function () {
  "use strict";
  var dialog = null;

  function open(img, opener) {
    if (!dialog) {
      dialog = document.createElement("dialog");
      dialog.className = "book-zoom";
      dialog.setAttribute("aria-label", "Figure at full size");
      dialog.innerHTML = '<button type="button" class="book-zoom-close">Close</button>' +
        '<div class="book-zoom-scroll"></div>';
      dialog.querySelector(".book-zoom-close").addEventListener("click", function () { dialog.close(); });
      dialog.addEventListener("click", function (event) {
        if (event.target === dialog) dialog.close();  // the backdrop, beside the figure
      });
      document.body.appendChild(dialog);
    }
    var copy = img.cloneNode(false);
    copy.removeAttribute("width");
    copy.removeAttribute("height");
    copy.removeAttribute("loading");
    copy.className = "book-zoom-img";
    copy.style.width = img.naturalWidth + "px";
    copy.style.maxWidth = "none";
    dialog.querySelector(".book-zoom-scroll").replaceChildren(copy);
    dialog.addEventListener("close", function () { if (opener) opener.focus(); }, { once: true });
    dialog.showModal();
  }

  function scaledDown(img) {
    return img.naturalWidth > 0 && img.naturalWidth > img.getBoundingClientRect().width * 1.1;
  }

  function setUp(img) {
    if (img.dataset.bookZoom) return;
    img.dataset.bookZoom = "1";
    var button = document.createElement("button");
    button.type = "button";
    button.className = "book-zoom-open";
    button.textContent = "Full size";
    button.setAttribute("aria-label", "Open the figure at full size");
    button.addEventListener("click", function () { open(img, button); });
    img.addEventListener("click", function () { if (scaledDown(img)) open(img, button); });
    img.insertAdjacentElement("afterend", button);
    var mark = function () { img.classList.toggle("book-zoomable", scaledDown(img)); };
    mark();
    if (typeof ResizeObserver === "function") new ResizeObserver(mark).observe(img);
  }

  var images = document.querySelectorAll("article.bd-article figure img, article.bd-article .cell_output img");
  images.forEach(function (img) {
    if (img.closest(".attn-fallback")) return;  // an explorer's static figure: the explorer replaces it
    if (img.complete) setUp(img);
    else img.addEventListener("load", function () { setUp(img); }, { once: true });
  });
})();
