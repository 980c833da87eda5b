// The course website's own script (course site; listed in _config.yml): a figure of a cell's output
// opens at its full size on click, over the page (scrollable when larger than the window); a click
// or Escape closes it. No network, no library.
(function () {
  "use strict";

  function close(overlay) {
    overlay.remove();
    document.removeEventListener("keydown", overlay.courseKeyHandler);
  }

  function open(img) {
    const overlay = document.createElement("div");
    overlay.className = "course-zoom-overlay";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-label", "enlarged figure");
    const big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt || "figure";
    // Full size, but never smaller than the window allows: small figures grow to fit it.
    const scale = Math.max(1, Math.min((window.innerWidth * 0.95) / img.naturalWidth,
                                       (window.innerHeight * 0.95) / img.naturalHeight));
    big.width = Math.round(img.naturalWidth * scale);
    big.height = Math.round(img.naturalHeight * scale);
    const hint = document.createElement("div");
    hint.className = "course-zoom-hint";
    hint.textContent = "click or press Esc to close";
    overlay.append(big, hint);
    overlay.addEventListener("click", () => close(overlay));
    overlay.courseKeyHandler = (event) => { if (event.key === "Escape") close(overlay); };
    document.addEventListener("keydown", overlay.courseKeyHandler);
    document.body.append(overlay);
  }

  function setUp() {
    document.querySelectorAll("div.cell_output img").forEach((img) => {
      img.classList.add("course-zoomable");
      img.title = img.title || "click to enlarge";
      img.addEventListener("click", () => open(img));
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();
