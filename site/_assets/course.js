// The course website's own script (course site; listed in _config.yml): a figure of a cell's output
// opens at its full size on click, over the page (scrollable when larger than the window); a click
// or Escape closes it; and (below) the mock interview's rounds. No network, no library.
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

// The mock interview (site page interview.html; course_tools/site.py writes `#course-interview-config`
// next to the quiz, which course_lib/quiz.js has drawn by the time this runs): a round of n questions
// at a time (5, 10 or 20), weakest first as quiz.js orders them (the same Leitner boxes in
// localStorage), ties mixed across lessons and kinds; the lessons asked (all, a part, one lesson) and n
// are remembered; after a round, what was right, wrong and where to reread it. The answers are still
// checked, judged and recorded by quiz.js; only a non-answer (no digit, no option picked) is asked again.
(function () {
  "use strict";
  const BOXES = "course-interview-v1";            // quiz.js's Leitner boxes (read here, never written)
  const SETTINGS = "course-interview-settings-v1";  // {filter, n, lang}
  const SIZES = [5, 10, 20];

  function readStore(key) {
    try { return JSON.parse(localStorage.getItem(key) || "{}") || {}; } catch (e) { return {}; }
  }
  function writeStore(key, value) {
    try { localStorage.setItem(key, JSON.stringify(value)); } catch (e) { /* private mode */ }
  }
  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => node.setAttribute(k, v));
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, (whole, key) => (key in values ? String(values[key]) : whole));
  }
  function shuffle(list) {
    for (let i = list.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [list[i], list[j]] = [list[j], list[i]];
    }
    return list;
  }

  // quiz.js's order: never answered, then due (lowest box first, longest ago first), then the rest
  function weakness(state, now, item) {
    const s = state[item.id];
    return s ? [s.due <= now ? 0 : 1, s.box, s.last] : [0, 0, 0];
  }
  // Items equally weak (all the never-answered ones, typically): one of each lesson in turn, lessons
  // in a random order, and not two of a kind in a row where the lesson has another kind.
  function interleave(group) {
    const lessons = new Map();
    shuffle(group.slice()).forEach((item) => {
      if (!lessons.has(item.lesson)) lessons.set(item.lesson, []);
      lessons.get(item.lesson).push(item);
    });
    const queues = shuffle([...lessons.values()]);
    const out = [];
    let kind = null;
    while (out.length < group.length) {
      queues.forEach((queue) => {
        if (!queue.length) return;
        const i = Math.max(0, queue.findIndex((item) => item.kind !== kind));
        const [item] = queue.splice(i, 1);
        out.push(item);
        kind = item.kind;
      });
    }
    return out;
  }
  function weakestFirst(items) {
    const state = readStore(BOXES), now = Date.now();
    const keyed = items.map((item) => ({item: item, key: weakness(state, now, item)}));
    keyed.sort((a, b) => {
      for (let i = 0; i < 3; i++) if (a.key[i] !== b.key[i]) return a.key[i] - b.key[i];
      return a.item.id < b.item.id ? -1 : 1;
    });
    const out = [];
    for (let start = 0; start < keyed.length;) {
      let end = start + 1;
      while (end < keyed.length && keyed[end].key.join() === keyed[start].key.join()) end++;
      out.push(...interleave(keyed.slice(start, end).map((k) => k.item)));
      start = end;
    }
    return out;
  }

  function mockInterview(root, config) {
    const items = JSON.parse(root.querySelector(".course-quiz-items").textContent);
    const toggle = root.querySelector(".course-quiz-lang");
    const lessonIds = [...new Set(items.map((item) => item.lesson))].sort();
    const parts = (config.parts || []).map((part) => Object.assign({}, part, {
      lessons: part.lessons.filter((n) => lessonIds.includes(n))})).filter((part) => part.lessons.length);
    const settings = readStore(SETTINGS);
    const valid = (f) => f === "all" || lessonIds.includes(f) || parts.some((p) => p.id === f);
    let n = SIZES.includes(settings.n) ? settings.n : 10;
    let filter = valid(settings.filter) ? settings.filter : "all";
    const lang = () => (toggle && toggle.textContent.trim() === "English" ? "zh" : "en");
    const words = () => config.words[lang()] || config.words.en;
    const remember = () => writeStore(SETTINGS, {filter: filter, n: n, lang: lang()});
    if (settings.lang === "zh" && lang() === "en" && toggle) toggle.click();   // quiz.js redraws in Chinese

    const asked = new Set();   // asked in this visit's earlier rounds: the next round draws from the others
    let queue = [], roundNo = 1, results = {};
    const round = () => queue.slice(0, n);
    const inFilter = (item) => {
      if (filter === "all") return true;
      const part = parts.find((p) => p.id === filter);
      return part ? part.lessons.includes(item.lesson) : item.lesson === filter;
    };

    // the controls: lessons, n, progress, next; the round's summary under the questions
    const controls = el("div", {class: "course-interview-controls"});
    const lessonLabel = el("label", {class: "course-interview-field"});
    const lessonName = el("span", {});
    const lessonSelect = el("select", {class: "course-interview-lessons"});
    lessonLabel.append(lessonName, lessonSelect);
    const sizeLabel = el("label", {class: "course-interview-field"});
    const sizeName = el("span", {});
    const sizeSelect = el("select", {class: "course-interview-size"});
    SIZES.forEach((k) => sizeSelect.append(el("option", {value: String(k)}, String(k))));
    sizeLabel.append(sizeName, sizeSelect);
    const nextTop = el("button", {type: "button", class: "course-interview-next"});
    const progress = el("p", {class: "course-interview-progress", role: "status"});
    const status = el("div", {class: "course-interview-status"});
    status.append(progress, nextTop);
    controls.append(lessonLabel, sizeLabel, status);
    const summary = el("div", {class: "course-interview-summary", role: "status", hidden: ""});
    root.insertBefore(controls, root.querySelector(".course-quiz-body"));
    root.append(summary);

    function drawControls() {
      const w = words(), l = lang();
      lessonName.textContent = `${config.words.en.lessons} · ${config.words.zh.lessons}`;
      sizeName.textContent = `${config.words.en.perRound} · ${config.words.zh.perRound}`;
      lessonSelect.textContent = "";
      lessonSelect.append(el("option", {value: "all"}, w.all));
      const lessonOption = (id) => el("option", {value: id},
        `${id} · ${((config.lessons || {})[id] || {})[l] || fill(w.lesson, {n: id})}`);
      parts.forEach((part) => {
        const group = el("optgroup", {label: part[l] || part.en});
        group.append(el("option", {value: part.id}, fill(w.allOf, {part: part[l] || part.en, k: part.lessons.length})));
        part.lessons.forEach((id) => group.append(lessonOption(id)));
        lessonSelect.append(group);
      });
      lessonIds.filter((id) => !parts.some((p) => p.lessons.includes(id))).forEach((id) => lessonSelect.append(lessonOption(id)));
      lessonSelect.value = filter;
      sizeSelect.value = String(n);
    }

    function start() {   // a new round from this filter's questions not asked yet in this visit
      const pool = items.filter(inFilter);
      let fresh = pool.filter((item) => !asked.has(item.id));
      if (!fresh.length) { pool.forEach((item) => asked.delete(item.id)); fresh = pool; }
      queue = weakestFirst(fresh);
      results = {};
      apply();
    }

    function apply() {   // show only the round, in its order; progress, summary, words
      const w = words(), now = round();
      const body = root.querySelector(".course-quiz-body");
      const nodes = [...body.querySelectorAll(":scope > .course-quiz-item")];
      const byId = new Map(nodes.map((node) => [node.getAttribute("data-item"), node]));
      const ids = new Set(now.map((item) => item.id));
      const order = now.map((item) => byId.get(item.id)).filter(Boolean)
        .concat(nodes.filter((node) => !ids.has(node.getAttribute("data-item"))));
      // moved only when out of order (after a new round or quiz.js's redraw): a move loses the focus
      if (order.some((node, i) => node !== nodes[i])) body.append(...order);
      nodes.forEach((node) => { node.hidden = !ids.has(node.getAttribute("data-item")); });
      root.setAttribute("data-round", String(roundNo));
      root.setAttribute("data-per-round", String(n));
      root.setAttribute("data-filter", filter);
      const answered = now.filter((item) => item.id in results);
      progress.textContent = now.length ? fill(w.progress, {r: roundNo, a: answered.length, n: now.length}) : w.empty;
      nextTop.textContent = fill(w.next, {n: n});
      nextTop.hidden = !now.length;
      drawSummary(now, answered.length === now.length && now.length > 0);
    }

    function drawSummary(now, done) {
      summary.hidden = !done;
      summary.textContent = "";
      if (!done) return;
      const w = words(), l = lang();
      const right = now.filter((item) => results[item.id]).length;
      summary.append(el("p", {class: "course-interview-summary-title"},
        fill(w.done, {r: roundNo, right: right, wrong: now.length - right})));
      const missed = now.filter((item) => !results[item.id]);
      if (!missed.length) {
        summary.append(el("p", {}, w.allRight));
      } else {
        summary.append(el("p", {}, w.reread + (l === "zh" ? "：" : ":")));
        const list = el("ul", {class: "course-interview-reread"});
        [...new Set(missed.map((item) => item.lesson))].sort().forEach((id) => {
          const lesson = (config.lessons || {})[id] || {};
          const li = el("li", {});
          const link = el("a", {href: lesson.href || "#"}, `${fill(w.lesson, {n: id})} · ${lesson[l] || lesson.en || ""}`);
          const cells = [...new Set(missed.filter((item) => item.lesson === id).map((item) => item.cell))];
          li.append(link, document.createTextNode(` — ${cells.map((c) => `“${c}”`).join(l === "zh" ? "、" : ", ")}`));
          list.append(li);
        });
        summary.append(list);
      }
      const left = items.filter(inFilter).filter((item) => !asked.has(item.id) && !now.includes(item));
      if (!left.length) summary.append(el("p", {class: "course-interview-over"}, w.over));
      const next = el("button", {type: "button", class: "course-interview-next"}, fill(w.next, {n: n}));
      next.addEventListener("click", nextRound);
      summary.append(next);
    }

    function nextRound() {
      round().forEach((item) => asked.add(item.id));
      roundNo += 1;
      start();
      controls.scrollIntoView({block: "start"});
    }

    lessonSelect.addEventListener("change", () => { filter = lessonSelect.value; remember(); start(); });
    sizeSelect.addEventListener("change", () => { n = parseInt(sizeSelect.value, 10); remember(); apply(); });
    nextTop.addEventListener("click", nextRound);

    // A non-answer is asked again before quiz.js judges it: not a second parser - with no digit in the
    // answer quiz.js's firstNumber finds no number either; anything with a digit goes to it.
    root.addEventListener("click", (event) => {
      const button = event.target.closest && event.target.closest(".course-quiz-item > button");
      if (!button) return;
      const item = button.parentElement;
      const kind = item.getAttribute("data-kind");
      if (button !== item.querySelector(":scope > button") || kind === "explain") return;
      let hint = item.querySelector(".course-interview-again");
      const problem = kind === "numeric" && !/\d/.test((item.querySelector("input.course-quiz-answer") || {}).value || "")
        ? "again" : kind === "choice" && !item.querySelector("input[type=radio]:checked") ? "pick" : null;
      if (!problem) { if (hint) hint.remove(); return; }
      event.stopPropagation();
      if (!hint) {
        hint = el("p", {class: "course-interview-again", role: "alert"});
        item.insertBefore(hint, item.querySelector(".course-quiz-verdict"));
      }
      hint.textContent = words()[problem];
      const input = item.querySelector("input.course-quiz-answer");
      if (input) input.focus();
    }, true);
    // after quiz.js: a verdict judged (right or wrong) counts for the round; a new language redraws
    root.addEventListener("click", (event) => {
      if (toggle && event.target === toggle) { remember(); drawControls(); }
      round().forEach((item) => {
        const verdict = root.querySelector(`.course-quiz-item[data-item="${item.id}"] .course-quiz-verdict`);
        const correct = verdict && verdict.getAttribute("data-correct");
        if (correct === "true" || correct === "false") results[item.id] = correct === "true";
      });
      apply();
    });
    // Enter in an answer box checks it
    root.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" || !event.target.matches("input.course-quiz-answer")) return;
      const button = event.target.parentElement.querySelector(":scope > button");
      if (button) { event.preventDefault(); button.click(); }
    });

    drawControls();
    start();
    root.classList.add("course-interview");
  }

  function setUp() {
    const config = document.getElementById("course-interview-config");
    const root = document.querySelector(".course-quiz[data-mode='interview'][data-ready]");
    if (!config || !root || !root.querySelector(".course-quiz-body")) return;
    mockInterview(root, JSON.parse(config.textContent));
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();
