// The "Check yourself" quiz (course_lib/quiz.py writes the items and this script into the page).
// No server and no network: the accepted ranges come with the items, and each item's Leitner box
// (1-5: right moves it up, wrong sends it back to 1) is kept in this browser's localStorage.
(function () {
  const STORE = "course-interview-v1";
  const BOX_DAYS = {1: 0, 2: 1, 3: 3, 4: 7, 5: 16};
  const DAY = 24 * 3600 * 1000;
  const WORDS = {
    en: {check: "Check", show: "Show the model answer", same: "Mine said the same",
         missed: "I missed something", right: "right", wrong: "wrong", review: "to review",
         folklore: "wrong — that is the usual answer the lesson corrects", measured: "measured",
         accepted: "accepted", reread: "reread", noNumber: "no number in your answer",
         score: (r, n) => `${r} of ${n} answered right`, lang: "中文"},
    zh: {check: "检查", show: "显示参考答案", same: "我的回答与之一致", missed: "我漏了要点",
         right: "正确", wrong: "错误", review: "需复习", folklore: "错误——这正是本课纠正的常见说法",
         measured: "实测", accepted: "可接受", reread: "重读", noNumber: "回答中没有数字",
         score: (r, n) => `答对 ${r} / ${n}`, lang: "English"},
  };

  function load() {
    try { return JSON.parse(localStorage.getItem(STORE) || "{}"); } catch (e) { return {}; }
  }
  function save(state) {
    try { localStorage.setItem(STORE, JSON.stringify(state)); } catch (e) { /* private mode */ }
  }
  function judge(id, correct) {
    const state = load();
    const before = (state[id] || {}).box || 1;
    const box = correct ? Math.min(before + 1, 5) : 1;
    const now = Date.now();
    state[id] = {box: box, last: now, due: now + BOX_DAYS[box] * DAY, correct: correct};
    save(state);
  }
  // as course_lib.quiz.parse_number: "1/16" is divided out, "6.25%" answers a fraction item as 0.0625
  function firstNumber(text, unit) {
    const num = "-?\\d[\\d,]*(?:\\.\\d+)?(?:e[-+]?\\d+)?|-?\\.\\d+";
    const m = text.replace(/−/g, "-").match(new RegExp("(" + num + ")(?:\\s*/\\s*(" + num + "))?\\s*(%)?", "i"));
    if (!m) return null;
    let value = parseFloat(m[1].replace(/,/g, ""));
    if (m[2] !== undefined) {
      const d = parseFloat(m[2].replace(/,/g, ""));
      if (d === 0) return null;
      value /= d;
    }
    if (m[3] && (unit || "").trim() !== "%") value /= 100;
    return value;
  }
  function fmt(x) { return Math.abs(x) < 1000 ? Number(x.toPrecision(3)).toString() : Math.round(x).toLocaleString("en"); }
  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => node.setAttribute(k, v));
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function pick(texts, lang) { return texts[lang] || texts.en; }
  // "text." once: an option or a measured value that already ends a sentence gets no second stop
  function stop(text) { return /[.!?。！？)]$/.test(text.trim()) ? text.trim() : text.trim() + "."; }

  function renderItem(item, lang, onJudged, showLesson) {
    const w = WORDS[lang];
    const box = el("div", {class: "course-quiz-item", "data-item": item.id, "data-kind": item.kind});
    if (showLesson) box.append(el("span", {class: "course-quiz-lesson"}, (lang === "zh" ? "第 " + item.lesson + " 课" : "lesson " + item.lesson)));
    box.append(el("p", {class: "course-quiz-question"}, pick(item.question, lang)));
    const verdict = el("div", {class: "course-quiz-verdict", role: "status"});
    const show = (correct, text) => {
      verdict.textContent = text + ` ${w.reread}: “${item.cell}”.`;
      verdict.className = "course-quiz-verdict " + (correct === true ? "right" : correct === false ? "wrong" : "open");
      verdict.setAttribute("data-correct", String(correct));
      if (correct !== null) { judge(item.id, correct); onJudged(); }
    };
    if (item.kind === "numeric") {
      const input = el("input", {type: "text", class: "course-quiz-answer", "aria-label": "answer"});
      const button = el("button", {type: "button"}, w.check);
      button.onclick = () => {
        const got = firstNumber(input.value, item.unit);
        const measured = `${w.measured} ${item.measured}`;
        if (got === null) { show(false, `${w.wrong}: ${w.noNumber}; ${stop(measured)} ${stop(pick(item.why, lang))}`); return; }
        const ok = item.accepted[0] <= got && got <= item.accepted[1];
        show(ok, `${ok ? w.right : w.wrong}: ${measured} (${w.accepted} ${fmt(item.accepted[0])}–${fmt(item.accepted[1])}). ${stop(pick(item.why, lang))}`);
      };
      box.append(input, button);
    } else if (item.kind === "choice") {
      const list = el("div", {class: "course-quiz-options"});
      item.options.forEach((option, i) => {
        const label = el("label", {});
        const radio = el("input", {type: "radio", name: "q-" + item.id + "-" + Math.random().toString(36).slice(2), value: String(i)});
        label.append(radio, document.createTextNode(" " + "abcdefgh"[i] + ") " + pick(option, lang)));
        list.append(label, el("br"));
      });
      const button = el("button", {type: "button"}, w.check);
      button.onclick = () => {
        const chosen = list.querySelector("input:checked");
        const index = chosen ? parseInt(chosen.value, 10) : -1;
        const ok = index === item.answer;
        const lead = ok ? w.right : (index === item.folklore ? w.folklore : w.wrong);
        show(ok, `${lead}: ${"abcdefgh"[item.answer]}) ${stop(pick(item.options[item.answer], lang))} ${stop(pick(item.why, lang))}`);
      };
      box.append(list, button);
    } else {
      const text = el("textarea", {rows: "3", cols: "70", class: "course-quiz-answer", "aria-label": "answer"});
      const reveal = el("button", {type: "button"}, w.show);
      const model = el("blockquote", {class: "course-quiz-model", hidden: ""}, pick(item.model || {}, lang));
      const same = el("button", {type: "button", hidden: ""}, w.same);
      const missed = el("button", {type: "button", hidden: ""}, w.missed);
      reveal.onclick = () => { model.hidden = false; same.hidden = false; missed.hidden = false; };
      same.onclick = () => show(true, `${w.right}: ${stop(pick(item.why, lang))}`);
      missed.onclick = () => show(false, `${w.review}: ${stop(pick(item.why, lang))}`);
      box.append(text, reveal, model, same, missed);
    }
    box.append(verdict);
    return box;
  }

  function order(items) {
    const state = load();
    const now = Date.now();
    const key = (item) => {
      const s = state[item.id];
      if (!s) return [0, 0, 0];
      return [s.due <= now ? 0 : 1, s.box, s.last];
    };
    return items.slice().sort((a, b) => {
      const x = key(a), y = key(b);
      for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i];
      return a.id < b.id ? -1 : 1;
    });
  }

  function render(root) {
    const items = JSON.parse(root.querySelector(".course-quiz-items").textContent);
    const mode = root.getAttribute("data-mode");
    let lang = root.getAttribute("data-lang") || "en";
    const body = el("div", {class: "course-quiz-body"});
    const score = el("p", {class: "course-quiz-score"});
    const toggle = el("button", {type: "button", class: "course-quiz-lang"});
    const update = () => {
      const state = load();
      const judged = items.filter((i) => state[i.id]);
      score.textContent = WORDS[lang].score(judged.filter((i) => state[i.id].correct).length, judged.length);
    };
    const draw = () => {
      body.textContent = "";
      toggle.textContent = WORDS[lang].lang;
      (mode === "interview" ? order(items) : items).forEach(
        (item) => body.append(renderItem(item, lang, update, mode === "interview")));
      update();
    };
    toggle.onclick = () => { lang = lang === "en" ? "zh" : "en"; draw(); };
    root.append(toggle, score, body);
    draw();
  }

  document.querySelectorAll(".course-quiz:not([data-ready])").forEach((root) => {
    root.setAttribute("data-ready", "1");
    render(root);
  });
})();
