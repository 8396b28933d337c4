// A scroll cue for wide tables: the theme puts every table in a container that scrolls sideways.
// A container whose table is wider than it gets the class is-scrollable (and at-end once scrolled
// to its right edge); the style sheet shows the cue. The caption sits above the container
// (mechaudit.sphinxext.table), so it stays on the screen while the table scrolls.
(() => {
  const mark = box => {
    const wide = box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle("is-scrollable", wide);
    box.classList.toggle("at-end", wide && box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
    const cap = box.previousElementSibling;
    if (cap && cap.classList.contains("table-caption")) cap.classList.toggle("is-scrollable", wide);
  };
  const all = () => document.querySelectorAll(".pst-scrollable-table-container").forEach(mark);
  document.addEventListener("DOMContentLoaded", () => {
    all();
    document.querySelectorAll(".pst-scrollable-table-container").forEach(box =>
      box.addEventListener("scroll", () => mark(box), {passive: true}));
  });
  window.addEventListener("resize", all);
})();
