// The annotation page: one query at a time, its pooled passages in their documents, keyboard-driven.
//
// Offsets: the server sends each passage's text with its document offsets (code points, as Python
// counts them). A selection is turned into offsets relative to the passage's element (the length of
// the text from the element's start to the selection's boundary, in UTF-16 units, as the DOM counts),
// then into code points of the passage, then into document offsets. The server checks every span's
// text against the document and refuses a wrong one.
"use strict";

const VERDICT_NAMES = {
  "answers": "answers (the spans below)",
  "answered-elsewhere": "answered elsewhere",
  "not-answerable": "not answerable from these documents",
  "unclear": "unclear",
};
const VERDICT_KEYS = { "1": "answered-elsewhere", "2": "not-answerable", "3": "unclear" };

const state = {
  annotator: "",
  queue: null,     // /api/state
  index: null,     // the query shown
  task: null,      // /api/task/{index}
  spans: [],       // [{doc_id, start, end, text}] in document order
  verdict: null,   // a marked verdict, or null ("answers" when spans are selected)
  undo: [],        // earlier {spans, verdict}
  dirty: false,
  leaveArmed: null, // the key pressed once to leave unsaved work
};

const $ = (id) => document.getElementById(id);

// --- offsets -------------------------------------------------------------------------------------

function u16ToCodePoints(text, units) {
  let points = 0;
  for (let i = 0; i < units; points++) i += text.codePointAt(i) > 0xffff ? 2 : 1;
  return points;
}

function codePointsToU16(text, points) {
  let units = 0;
  for (let p = 0; p < points && units < text.length; p++) units += text.codePointAt(units) > 0xffff ? 2 : 1;
  return units;
}

// UTF-16 units from the start of `element` to the boundary point (node, offset).
function offsetIn(element, node, offset) {
  const range = document.createRange();
  range.setStart(element, 0);
  range.setEnd(node, offset);
  return range.toString().length;
}

// The spans the current selection covers in the passages: one per passage it touches, clamped to the
// passage (text selected in the grey context is not part of the pool and is left out), whitespace at
// either end trimmed.
function selectedSpans() {
  const selection = window.getSelection();
  if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return [];
  const found = [];
  for (let r = 0; r < selection.rangeCount; r++) {
    const range = selection.getRangeAt(r);
    document.querySelectorAll(".passage-text").forEach((element) => {
      if (!range.intersectsNode(element)) return;
      const passage = state.task.passages[Number(element.dataset.passage)];
      const whole = document.createRange();
      whole.selectNodeContents(element);
      let from = 0;
      let to = passage.text.length;
      if (range.compareBoundaryPoints(Range.START_TO_START, whole) > 0) {
        from = offsetIn(element, range.startContainer, range.startOffset);
      }
      if (range.compareBoundaryPoints(Range.END_TO_END, whole) < 0) {
        to = offsetIn(element, range.endContainer, range.endOffset);
      }
      while (from < to && /\s/.test(passage.text[from])) from++;
      while (to > from && /\s/.test(passage.text[to - 1])) to--;
      if (to <= from) return;
      // code points (a boundary inside a surrogate pair takes the whole character)
      const start = passage.start + u16ToCodePoints(passage.text, from);
      const end = passage.start + u16ToCodePoints(passage.text, to);
      found.push({ doc_id: passage.doc_id, start, end, text: textIn(passage, start, end) });
    });
  }
  return found;
}

// Overlapping or touching spans of one passage joined, in document order (the server joins them too).
function joinSpans(spans) {
  const sorted = [...spans].sort((a, b) => (a.doc_id < b.doc_id ? -1 : a.doc_id > b.doc_id ? 1 : a.start - b.start));
  const joined = [];
  for (const span of sorted) {
    const last = joined[joined.length - 1];
    const passage = passageOf(span);
    if (last && last.doc_id === span.doc_id && span.start <= last.end && passageOf(last) === passage) {
      if (span.end > last.end) {
        last.end = span.end;
        last.text = textIn(passage, last.start, last.end);
      }
    } else {
      joined.push({ ...span });
    }
  }
  return joined;
}

function passageOf(span) {
  return state.task.passages.find((p) => p.doc_id === span.doc_id && p.start <= span.start && span.end <= p.end);
}

function textIn(passage, start, end) {
  return passage.text.slice(codePointsToU16(passage.text, start - passage.start), codePointsToU16(passage.text, end - passage.start));
}

// --- state changes (each one undoable) -------------------------------------------------------------

function change(mutate) {
  state.undo.push({ spans: state.spans.map((s) => ({ ...s })), verdict: state.verdict });
  mutate();
  state.dirty = true;
  renderAnswer();
  renderPassages();
}

function addSelection() {
  const spans = selectedSpans();
  if (spans.length === 0) {
    say("Select the text that answers the query in a highlighted passage first, then press a.", true);
    return;
  }
  change(() => {
    state.spans = joinSpans([...state.spans, ...spans]);
    state.verdict = null; // spans mean "answers"
  });
  window.getSelection().removeAllRanges();
  say(`Added ${spans.length === 1 ? "a span" : spans.length + " spans"}.`);
}

function removeSpan(index) {
  if (index < 0 || index >= state.spans.length) return;
  change(() => state.spans.splice(index, 1));
}

function markVerdict(verdict) {
  change(() => {
    state.verdict = state.verdict === verdict ? null : verdict;
    if (state.verdict) state.spans = []; // only "answers" has spans; u brings them back
  });
}

function undo() {
  const last = state.undo.pop();
  if (!last) {
    say("Nothing to undo.");
    return;
  }
  state.spans = last.spans;
  state.verdict = last.verdict;
  state.dirty = true;
  renderAnswer();
  renderPassages();
}

function currentVerdict() {
  return state.verdict || (state.spans.length ? "answers" : null);
}

// --- server ------------------------------------------------------------------------------------

async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  const response = await fetch(path, options);
  let answer;
  try {
    answer = await response.json();
  } catch (error) {
    throw new Error(`the server answered ${response.status} without JSON`);
  }
  if (!response.ok) throw new Error(answer.error || `the server answered ${response.status}`);
  return answer;
}

function annotatorQuery() {
  return state.annotator ? `?annotator=${encodeURIComponent(state.annotator)}` : "";
}

async function loadState() {
  state.queue = await api(`/api/state${annotatorQuery()}`);
  renderProgress();
  renderFocus();
  renderProblems();
}

async function showQuery(index) {
  state.task = await api(`/api/task/${index}${annotatorQuery()}`);
  state.index = index;
  const mine = state.task.mine;
  state.spans = mine ? mine.spans.map((s) => ({ doc_id: s.doc_id, start: s.start, end: s.end, text: s.text })) : [];
  state.verdict = mine && mine.verdict !== "answers" ? mine.verdict : null;
  $("note").value = mine ? mine.note : "";
  state.undo = [];
  state.dirty = false;
  state.leaveArmed = null;
  renderTask();
  const url = new URL(window.location);
  if (state.annotator) url.searchParams.set("annotator", state.annotator);
  history.replaceState(null, "", url);
}

async function save() {
  if (!state.annotator) {
    say("Type your name in the Annotator field first.", true);
    $("annotator").focus();
    return;
  }
  const verdict = currentVerdict();
  if (!verdict) {
    say("Select the answering text and press a, or mark a verdict with 1, 2 or 3; then Enter.", true);
    return;
  }
  try {
    const answer = await api("/api/judgements", {
      annotator: state.annotator,
      query_id: state.task.query.query_id,
      verdict,
      spans: state.spans,
      shown: state.task.passages.map((p) => ({ doc_id: p.doc_id, start: p.start, end: p.end, document_sha256: p.document_sha256 })),
      note: $("note").value,
    });
    state.queue = answer;
    renderProgress();
    loadAgreement();
    const saved = state.index;
    const next = nextToJudge(saved);
    if (next === null) {
      await showQuery(saved);
      say(`Saved. ${answer.progress.text}: every query is judged.`);
    } else {
      await showQuery(next);
      say(`Saved query ${saved + 1} (${VERDICT_NAMES[verdict]}).`);
    }
  } catch (error) {
    say(`Not saved: ${error.message}`, true);
  }
}

// The first query after `index` this annotator has not judged, else the first before it.
function nextToJudge(index) {
  const queries = state.queue.queries;
  for (let step = 1; step <= queries.length; step++) {
    const candidate = (index + step) % queries.length;
    if (!queries[candidate].judged) return candidate;
  }
  return null;
}

async function move(step, key) {
  const target = state.index + step;
  if (target < 0 || target >= state.queue.total) {
    say(step > 0 ? "This is the last query." : "This is the first query.");
    return;
  }
  if (state.dirty && state.leaveArmed !== key) {
    state.leaveArmed = key;
    say(`Unsaved changes: press ${key} again to leave them, or Enter to save.`, true);
    return;
  }
  try {
    await showQuery(target);
    say("");
  } catch (error) {
    say(error.message, true);
  }
}

async function loadAgreement() {
  try {
    const answer = await api("/api/agreement");
    renderAgreement(answer.rows);
  } catch (error) {
    $("agreement-empty").textContent = `Agreement not available: ${error.message}`;
  }
}

async function setAnnotator(name) {
  state.annotator = name.trim();
  if (state.annotator) localStorage.setItem("rag-eval-annotator", state.annotator);
  try {
    await loadState();
    if (state.queue.total === 0) {
      renderEmpty();
      return;
    }
    const resume = state.queue.resume;
    await showQuery(resume === null ? 0 : resume);
    if (!state.annotator) say("Type your name in the Annotator field to start.");
    else if (resume === null) say(`${state.queue.progress.text}: every query is judged.`);
    else say(`Welcome, ${state.annotator}: query ${resume + 1} is the first you have not judged.`);
  } catch (error) {
    say(error.message, true);
  }
}

// --- rendering ---------------------------------------------------------------------------------

function say(text, isError = false) {
  const message = $("message");
  message.textContent = text;
  message.className = isError ? "error" : text ? "ok" : "";
}

function renderProgress() {
  const queue = state.queue;
  $("progress").textContent = queue.progress ? queue.progress.text : `${queue.total} queries to judge`;
  $("position").textContent = state.index === null ? "" : `query ${state.index + 1} of ${queue.total}`;
}

// `rag-eval annotate --holes`: why the page offers only these passages.
function renderFocus() {
  const focus = $("focus");
  focus.textContent = state.queue.focus;
  focus.hidden = !state.queue.focus;
}

function renderProblems() {
  const list = $("problems");
  list.replaceChildren(...state.queue.problems.map((p) => Object.assign(document.createElement("li"), { textContent: p })));
}

function renderEmpty() {
  $("query").textContent = "No pooled query to judge.";
  $("query-meta").textContent = "Import queries and pool them first (rag-eval queries import FILE, then rag-eval pool build); then reload this page.";
  $("passages").replaceChildren();
}

function renderTask() {
  const task = state.task;
  $("query").textContent = task.query.text;
  const meta = [`asked ${task.query.count} time${task.query.count === 1 ? "" : "s"}`, `${task.passages.length} passage${task.passages.length === 1 ? "" : "s"} to read`];
  const others = task.judged_by.filter((name) => name !== state.annotator);
  if (others.length) meta.push(`also judged by ${others.join(", ")}`);
  const fresh = task.new_since_judged.length;
  if (fresh) meta.push(`${fresh} passage${fresh === 1 ? "" : "s"} new since you judged it`);
  $("query-meta").textContent = meta.join(" · ");
  $("reason").textContent = task.reason ? `Offered first: ${task.reason}` : "";
  $("reason").hidden = !task.reason;
  $("saved-before").textContent = task.mine ? `You judged this query at ${task.mine.judged_at}; saving again replaces it.` : "";
  renderProgress();
  renderPassages();
  renderAnswer();
}

// Each excerpt of a document: grey context, the passages to judge highlighted, the spans marked.
function renderPassages() {
  const passages = state.task.passages;
  const articles = state.task.excerpts.map((excerpt) => {
    const article = document.createElement("article");
    article.className = "passage";
    const source = document.createElement("div");
    source.className = "source";
    const shown = excerpt.pieces.filter((piece) => piece.passage !== null).map((piece) => {
      const passage = passages[piece.passage];
      return `${passage.start}–${passage.end} (found by ${passage.found_by.join(", ") || "the pool"})`;
    });
    source.textContent = `${excerpt.doc_id} · characters ${shown.join(", ")}`;
    const fresh = excerpt.pieces.filter((piece) => state.task.new_since_judged.includes(piece.passage));
    if (fresh.length) {
      article.classList.add("new");
      source.textContent += " · new since you judged this query";
    }
    const doc = document.createElement("div");
    doc.className = "doc";
    if (excerpt.start > 0) doc.append(context("…"));
    for (const piece of excerpt.pieces) {
      if (piece.passage === null) {
        doc.append(context(piece.text));
        continue;
      }
      const passage = passages[piece.passage];
      const text = document.createElement("span");
      text.className = "passage-text";
      text.dataset.passage = String(piece.passage);
      text.dataset.start = String(passage.start);
      text.append(...segments(passage));
      doc.append(text);
    }
    if (excerpt.end < excerpt.document_characters) doc.append(context("…"));
    article.append(source, doc);
    return article;
  });
  $("passages").replaceChildren(...articles);
}

function context(text) {
  const span = document.createElement("span");
  span.className = "context";
  span.textContent = text;
  return span;
}

// The passage's text as text nodes and <mark>s for the selected spans; nothing else goes into the
// element, so offsets measured in it are offsets in the passage.
function segments(passage) {
  const nodes = [];
  let at = 0; // UTF-16 units into passage.text
  for (const span of state.spans) {
    if (passageOf(span) !== passage) continue;
    const from = codePointsToU16(passage.text, span.start - passage.start);
    const to = codePointsToU16(passage.text, span.end - passage.start);
    if (from > at) nodes.push(document.createTextNode(passage.text.slice(at, from)));
    const mark = document.createElement("mark");
    mark.textContent = passage.text.slice(from, to);
    nodes.push(mark);
    at = to;
  }
  if (at < passage.text.length) nodes.push(document.createTextNode(passage.text.slice(at)));
  return nodes;
}

function renderAnswer() {
  document.querySelectorAll(".verdict").forEach((button) => {
    button.setAttribute("aria-pressed", String(button.dataset.verdict === state.verdict));
  });
  const verdict = currentVerdict();
  $("verdict-now").textContent = verdict ? `Verdict: ${VERDICT_NAMES[verdict]}` : "Verdict: none yet";
  const items = state.spans.map((span, index) => {
    const item = document.createElement("li");
    item.dataset.start = String(span.start);
    item.dataset.end = String(span.end);
    const text = document.createElement("span");
    text.className = "span-text";
    text.textContent = span.text;
    const where = document.createTextNode(` ${span.doc_id}[${span.start}:${span.end}]`);
    const remove = document.createElement("button");
    remove.type = "button";
    remove.tabIndex = -1;
    remove.title = "remove this span";
    remove.textContent = "×";
    remove.addEventListener("click", () => removeSpan(index));
    item.append(text, where, remove);
    return item;
  });
  $("spans").replaceChildren(...items);
}

const AGREEMENT_COLUMNS = [
  ["judges", "annotators"],
  ["queries", "queries both judged"],
  ["kappa", "Cohen's kappa (relevance)"],
  ["span_overlap", "span overlap (IoU)"],
  ["summary", "in words"],
];

function renderAgreement(rows) {
  const table = $("agreement-table");
  $("agreement-empty").hidden = rows.length > 0;
  if (rows.length === 0) {
    table.replaceChildren();
    return;
  }
  const head = document.createElement("tr");
  head.append(...AGREEMENT_COLUMNS.map(([, title]) => Object.assign(document.createElement("th"), { textContent: title })));
  const body = rows.map((row) => {
    const tr = document.createElement("tr");
    tr.append(...AGREEMENT_COLUMNS.map(([key]) => {
      const value = row[key];
      const ratio = key === "kappa" || key === "span_overlap";
      const shown = value === null ? "–" : ratio ? value.toFixed(2) : String(value);
      return Object.assign(document.createElement("td"), { textContent: shown });
    }));
    return tr;
  });
  table.replaceChildren(head, ...body);
}

// --- keys --------------------------------------------------------------------------------------

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return; // copy, paste and the browser's own keys
  const target = event.target;
  if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) {
    if (event.key === "Escape") target.blur();
    if (event.key === "Enter" && target.id === "annotator") {
      event.preventDefault();
      target.blur();
    }
    return;
  }
  if (!state.task) return;
  const key = event.key;
  const actions = {
    a: addSelection,
    x: () => removeSpan(state.spans.length - 1),
    u: undo,
    n: () => move(1, "n"),
    p: () => move(-1, "p"),
    Enter: save,
  };
  if (VERDICT_KEYS[key]) {
    event.preventDefault();
    markVerdict(VERDICT_KEYS[key]);
  } else if (actions[key]) {
    event.preventDefault();
    if (key !== "n" && key !== "p") state.leaveArmed = null;
    actions[key]();
  }
}

function start() {
  document.addEventListener("keydown", onKey);
  document.querySelectorAll(".verdict").forEach((button) => button.addEventListener("click", () => markVerdict(button.dataset.verdict)));
  $("save").addEventListener("click", save);
  const field = $("annotator");
  field.addEventListener("change", () => setAnnotator(field.value));
  api("/api/state").then((queue) => {
    const fromUrl = new URL(window.location).searchParams.get("annotator");
    const name = fromUrl || queue.default_annotator || localStorage.getItem("rag-eval-annotator") || "";
    field.value = name;
    return setAnnotator(name);
  }).catch((error) => say(error.message, true));
  loadAgreement();
}

start();
