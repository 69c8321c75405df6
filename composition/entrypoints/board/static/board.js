"use strict";
// agy board. Every string agy sends is put into the page as text (textContent), never as HTML.
(() => {
  const TOKEN = new URLSearchParams(location.search).get("token") || "";
  const STATES = [["needs_you", "Needs you"], ["working", "Working"], ["failed", "Failed"], ["idle", "Idle"]];
  const LABEL = Object.fromEntries(STATES);
  const $ = (id) => document.getElementById(id);
  let board = { rows: [], cards: [], servers: [], now: Date.now() / 1000 };
  let skew = 0;            // server clock - our clock (s)
  let selected = null;     // cascade id under the cursor in the list
  let opened = null;       // cascade id whose session is open
  let sessionSource = null;
  const seenCards = new Set();
  let firstSnapshot = true;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  // the display rule (core/display.py: visible() and command_view's glyph escapes) for text typed
  // here, an edited command: controls, format, invisible and non-ASCII space characters as escapes,
  // the rule's own glyphs (⋯ ⏎ ⇥) escaped, a backslash that would read as an escape doubled
  const INVISIBLE = /[\u034f\u115f\u1160\u3164\uffa0\u2800\u17b4\u17b5\u180b-\u180d\u180f\ufe00-\ufe0f\u22ef\u23ce\u21e5]|[\u{e0100}-\u{e01ef}]/u;
  const SHORT = { "\r": "\\r", "\v": "\\v", "\f": "\\f" };
  function escapeChar(ch) {
    if (ch === "\n" || ch === "\t" || ch === " ") return null;
    if (!(INVISIBLE.test(ch) || /\p{C}|\p{Z}/u.test(ch))) return null;
    if (SHORT[ch]) return SHORT[ch];
    const code = ch.codePointAt(0);
    if (code <= 0xff) return "\\x" + code.toString(16).padStart(2, "0");
    return code <= 0xffff ? "\\u" + code.toString(16).padStart(4, "0") : "\\U" + code.toString(16).padStart(8, "0");
  }
  function visibleText(text) {
    const chars = [...text];
    return chars.map((ch, i) => {
      if (ch !== "\\") return escapeChar(ch) || ch;
      const next = i + 1 < chars.length ? (escapeChar(chars[i + 1]) || chars[i + 1]) : "";
      return next && "xuUrvf\\".includes(next[0]) ? "\\\\" : "\\";
    }).join("");
  }
  const url = (path) => path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(TOKEN);
  async function post(path, body) {
    const res = await fetch(path, {
      method: "POST", credentials: "omit", cache: "no-store",
      headers: { "Content-Type": "application/json", "X-Board-Token": TOKEN },
      body: JSON.stringify(body || {}),
    });
    let data = {};
    try { data = await res.json(); } catch (e) { /* not JSON */ }
    if (!res.ok) throw new Error(data.error || ("HTTP " + res.status));
    return data;
  }
  function ago(t) {
    if (!t) return "";
    const s = Math.max(0, Date.now() / 1000 + skew - t);
    if (s < 5) return "just now";
    if (s < 45) return Math.round(s) + " s ago";
    if (s < 3600) return Math.round(s / 60) + " min ago";
    if (s < 86400) return Math.round(s / 3600) + " h ago";
    return Math.round(s / 86400) + " d ago";
  }
  const k = (n) => (n >= 1e6 ? (n / 1e6).toFixed(1) + "M" : n >= 1e3 ? (n / 1e3).toFixed(1) + "k" : String(n || 0));
  const short = (id) => (id || "").slice(0, 8);
  const titleOf = (r) => r.title || (r.parent_id ? "sub-agent " + short(r.cascade_id) : "conversation " + short(r.cascade_id));

  // ---------------------------------------------------------------- the board
  function order() {
    // parents in state order; each parent's children right under it
    const byId = Object.fromEntries(board.rows.map((r) => [r.cascade_id, r]));
    const kids = {};
    for (const r of board.rows) if (r.parent_id && byId[r.parent_id]) (kids[r.parent_id] ||= []).push(r);
    const out = [];
    for (const [state, label] of STATES) {
      const roots = board.rows.filter((r) => !(r.parent_id && byId[r.parent_id]) && r.state === state);
      if (!roots.length) continue;
      out.push({ group: state, label, n: roots.length });
      for (const r of roots) {
        out.push({ row: r, child: false });
        for (const c of kids[r.cascade_id] || []) out.push({ row: c, child: true });
      }
    }
    return out;
  }

  function renderCounts() {
    const n = Object.fromEntries(STATES.map(([s]) => [s, 0]));
    for (const r of board.rows) n[r.state] += 1;
    $("counts").replaceChildren(...STATES.map(([s, label]) =>
      el("span", { class: "chip st-" + s + (n[s] ? "" : " zero"), title: label }, label + " " + n[s])));
    const waiting = board.cards.length;  // the tab names the request itself (the first one waiting)
    document.title = waiting ? `(${waiting}) ${board.cards[0].ask || "agy needs you"}` : "agy board";
  }

  function renderRows() {
    const items = order();
    const rows = $("rows");
    if (!items.length) {
      rows.replaceChildren(el("p", { class: "empty" },
        board.servers.length ? "agy runs, but has no conversations yet." : "Looking for agy on this machine…"));
      return;
    }
    if (!selected || !board.rows.some((r) => r.cascade_id === selected)) {
      const first = items.find((i) => i.row);
      selected = first ? first.row.cascade_id : null;
    }
    rows.replaceChildren(...items.map((item) => {
      if (item.group) return el("h3", { class: "group-title" }, item.label, el("span", {}, String(item.n)));
      const r = item.row;
      return el("div", {
        class: "row" + (item.child ? " child" : "") + (r.cascade_id === selected ? " sel" : ""),
        role: "option", "aria-selected": r.cascade_id === selected ? "true" : "false",
        "data-id": r.cascade_id, "data-state": r.state,
        on: { click: () => { selected = r.cascade_id; openSession(r.cascade_id); } },
      },
        el("span", { class: "dot st-" + r.state, title: LABEL[r.state] }),
        el("span", { class: "row-title" }, (item.child ? "↳ " : "") + titleOf(r)),
        el("span", { class: "row-when", "data-t": r.last_activity }, ago(r.last_activity)),
        el("span", { class: "row-meta" },
          r.gates ? el("span", { class: "badge" }, r.gates === 1 ? "1 waiting" : r.gates + " waiting") : null,
          el("span", {}, r.model || "model unknown"),
          el("span", { title: "input / output tokens" }, "↑" + k(r.tokens_in) + " ↓" + k(r.tokens_out)),
          board.servers.length > 1 ? el("span", { title: "agy's port" }, ":" + r.port) : null));
    }));
  }

  function notifyNew() {
    const fresh = board.cards.filter((c) => !seenCards.has(c.gate_id));
    for (const c of board.cards) seenCards.add(c.gate_id);
    if (firstSnapshot) { firstSnapshot = false; if (!board.cards.length) return; }
    if (!fresh.length || !("Notification" in window) || Notification.permission !== "granted") return;
    for (const c of fresh) {  // the request itself; the conversation by agy's own title, where it gives one
      const n = new Notification(c.ask || "agy needs you", { body: c.title ? "in “" + c.title + "”" : "on the agy board", tag: c.gate_id });
      n.onclick = () => { window.focus(); openSession(c.cascade_id); };
    }
  }

  // A card the person has started on: an option picked, a write-in or a reason typed, focus inside,
  // or an answer on its way. Such a card is never replaced under them.
  function editing(node) {
    if (node.classList.contains("sent") || node.contains(document.activeElement)) return true;
    return [...node.querySelectorAll("input, textarea:not([hidden])")]
      .some((i) => (i.type === "text" || i.tagName === "TEXTAREA" ? i.value !== "" : i.checked));
  }

  // The home view, updated in place by gate id: a card whose content (its `shown` digest) did not
  // change is kept as it is (only its conversation's title is refreshed); a changed one is rebuilt,
  // unless the person is on it: then it stays, saying the request changed (its answer would be 409).
  function renderHome() {
    const box = $("cards");
    const have = new Map([...box.children].map((n) => [n.dataset.gate, n]));
    const want = board.cards.map((c) => {
      let n = have.get(c.gate_id);
      if (n && n.dataset.shown !== c.shown) {
        if (editing(n)) {
          if (!n.querySelector(".changed")) {
            const gone = n;
            n.append(el("div", { class: "note changed", role: "status" },
              "agy changed this request since it was shown: an answer to this card would be refused. ",
              el("button", { type: "button", class: "ghost", on: { click: () => { gone.remove(); renderHome(); } } }, "Show the new request")));
          }
        } else n = null;
      }
      if (!n) return card(c, true);
      const from = n.querySelector(".card-from");
      const title = c.title || "conversation " + short(c.cascade_id);
      if (from && from.textContent !== title) from.textContent = title;
      return n;
    });
    const keep = new Set(want);
    for (const n of have.values()) if (!keep.has(n)) n.remove();
    want.forEach((n, i) => { if (box.children[i] !== n) box.insertBefore(n, box.children[i] || null); });
    $("calm").hidden = board.cards.length > 0;
    // a notification's link names a card by its anchor (#card-1a2b3c4d, the digest's head): shown once it is here
    const named = location.hash.startsWith("#card-") && board.cards.find((c) => "#card-" + c.anchor === location.hash);
    if (named) {
      const n = box.querySelector(`[data-gate="${CSS.escape(named.gate_id)}"]`);
      history.replaceState(null, "", location.pathname + location.search);
      if (n) { n.classList.add("named"); n.scrollIntoView({ block: "center" }); }
    }
  }

  function applyBoard(data) {
    board = data;
    skew = data.now - Date.now() / 1000;
    renderCounts();
    renderRows();
    notifyNew();
    if (!opened) renderHome();
    else {
      const row = board.rows.find((r) => r.cascade_id === opened);
      if (row) sessionHead(row);
      renderPinned();
    }
  }

  // ---------------------------------------------------------------- gate cards
  const pending = new Map();  // gate_id -> card from the session stream

  // "always" that never widens: the narrowest rule for the request, editable, saved only on "Save as my
  // rule" (POST /rule: the board saves it only if it loads and matches the request approved)
  const K_APPROVALS = 3;  // identical approvals (same argv and cwd) in a session before a rule is offered
  const approvals = new Map();  // cascade_id + "|" + approval_key -> count, this page
  const approvedKey = (c) => c.cascade_id + "|" + c.approval_key;
  function proposalBox(c, why) {
    const text = el("textarea", { class: "rule-text", spellcheck: "false", rows: String(c.proposal.split("\n").length + 1),
      "aria-label": "the proposed rule (edit it before saving)" });
    text.value = c.proposal;
    const msg = el("div", { class: "form-msg", role: "alert" });
    const save = el("button", { type: "button", class: "primary", "data-act": "save-rule" }, "Save as my rule");
    const box = el("div", { class: "proposal", "data-proposal": c.gate_id, role: "group", "aria-label": "a rule you may save" },
      el("div", { class: "note" }, why), text,
      el("div", { class: "actions" }, save,
        el("button", { type: "button", class: "ghost", "data-act": "dismiss-rule", on: { click: () => box.remove() } }, "Not now")),
      msg);
    save.addEventListener("click", async () => {
      msg.textContent = ""; save.disabled = true;
      try {
        const r = await post(`/api/s/${encodeURIComponent(c.cascade_id)}/rule`, { gate_id: c.gate_id, rule: text.value });
        box.replaceChildren(el("div", { class: "note", "data-act": "rule-saved" },
          "Saved to " + r.path + ": it answers this request from the next session."));
      } catch (e) { msg.textContent = e.message; save.disabled = false; }
    });
    return box;
  }
  function offerAfterAllow(c, scope, label, node) {
    if (c.approval_key) approvals.set(approvedKey(c), (approvals.get(approvedKey(c)) || 0) + 1);
    const inCard = node.querySelector(".proposal");
    if (inCard) {  // offered on the card (identical approvals): keep it once the card goes away
      for (const b of inCard.querySelectorAll("button, textarea")) b.disabled = false;
      $("proposals").append(inCard); return;
    }
    if (scope === "once" || document.querySelector(`#proposals [data-proposal="${CSS.escape(c.gate_id)}"]`)) return;
    if (c.proposal) {
      $("proposals").append(proposalBox(c, `You chose “${label}”. The narrowest rule for exactly this request is below: ` +
        "edit it if you like and save it as your rule. Nothing is saved unless you click Save."));
    } else if (c.no_proposal) {
      $("proposals").append(el("div", { class: "proposal note" }, "No rule proposed for this request: " + c.no_proposal));
    }
  }

  // the SHA-256 of text (UTF-8) in hex; null where the browser gives no digest (not a secure context)
  async function sha256Hex(text) {
    if (!(window.crypto && crypto.subtle)) return null;
    const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
    return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }

  function card(c, withFrom) {
    const msg = el("div", { class: "form-msg", role: "alert" });
    const node = el("form", { class: "card", "data-gate": c.gate_id, "data-shown": c.shown, "data-kind": c.kind, "aria-label": "agy asks" });
    let ticket = "";  // a request too large for its card: what the fetch of its whole text gave (an allow carries it)
    let locked = () => false;  // the allow buttons stay disabled while true (the whole text is not on the page)
    const unlock = () => {
      for (const b of node.querySelectorAll("button, input, textarea")) b.disabled = false;
      if (locked()) for (const b of node.querySelectorAll('button[data-act="allow"]')) b.disabled = true;
    };
    const send = async (answer) => {
      for (const b of node.querySelectorAll("button, input, textarea")) b.disabled = true;
      msg.textContent = "";
      try {
        await post(`/api/s/${encodeURIComponent(c.cascade_id)}/answer`,
          { gate_id: c.gate_id, shown: c.shown, answer, ...(ticket ? { ticket } : {}) });
        if (answer === "allow" || (answer && answer.allow)) {
          const scope = answer === "allow" ? "once" : answer.allow.scope || "once";
          if (!(answer.allow && answer.allow.command)) {  // an edited command: agy's request is not what ran
            offerAfterAllow(c, scope, ((c.allows || []).find((a) => a.scope === scope) || { label: scope }).label, node);
          }
        }
        node.classList.add("sent");
        msg.textContent = "";
        node.append(el("div", { class: "note" }, "sent — waiting for agy to move on"));
      } catch (e) {
        msg.textContent = e.message;
        unlock();
        // agy refused the answer: its card retires with the gate, so what agy did and where to answer
        // (agy's terminal) stays on the page until the person dismisses it
        if (e.message.startsWith("agy refused the answer")) {
          const note = el("div", { class: "proposal note refused", role: "alert", "data-refused": c.gate_id }, e.message + " ");
          note.append(el("button", { type: "button", class: "ghost", on: { click: () => note.remove() } }, "Dismiss"));
          $("proposals").append(note);
        }
      }
    };
    const head = el("div", { class: "card-head" },
      el("span", { class: "card-kind" }, c.kind === "permission" ? "Permission" : c.kind === "question" ? "Question" : "Waiting"),
      c.tool ? el("span", {}, c.tool) : null,
      withFrom ? el("span", { class: "card-from", title: "the conversation (agy's own title)" }, c.title || "conversation " + short(c.cascade_id)) : null,
      withFrom ? el("button", { type: "button", class: "card-open ghost", on: { click: () => openSession(c.cascade_id) } }, "Open") : null);
    node.append(head);
    if (!c.answerable) {
      node.append(el("div", { class: "ask" }, c.ask || "agy waits for " + (c.what || "an answer") + " in its own terminal."),
        el("div", { class: "note" }, "This kind of request can only be answered there; the card goes away when agy moves on."));
      return node;
    }
    if (c.kind === "permission") {
      const sign = c.is_command === false ? "" : "$ ";  // a path or an action is not a command line
      // agy's file-edit review (c.review): its diff in place of a command; Accept / Reject its answers
      const noun = c.review ? "diff" : "command";
      const allowWord = c.review ? "Accept" : "Allow";
      if (!sign) node.append(el("div", { class: "ask" }, c.ask));
      const cmd = el("pre", { class: c.review ? "cmd diff" : "cmd" }, sign + c.command);
      node.append(cmd);
      if (c.full) {  // cut: one click shows the whole command (and one more the short view again)
        const lines = c.full.split("\n").length;
        const toggle = el("button", { type: "button", class: "ghost expand", "aria-expanded": "false" },
          `show the whole ${noun} (${lines} line${lines === 1 ? "" : "s"}, ${c.full.length} characters)`);
        toggle.addEventListener("click", () => {
          const open = toggle.getAttribute("aria-expanded") !== "true";
          cmd.textContent = sign + (open ? c.full : c.command);
          cmd.classList.toggle("whole", open);
          toggle.setAttribute("aria-expanded", String(open));
          toggle.textContent = open ? "show it cut again" :
            `show the whole ${noun} (${lines} line${lines === 1 ? "" : "s"}, ${c.full.length} characters)`;
        });
        cmd.addEventListener("click", () => { if (toggle.getAttribute("aria-expanded") !== "true") toggle.click(); });
        node.append(toggle);
      }
      // too large for the card (c.whole): the preview above; the whole text is fetched (keyed by the gate
      // and this card's digest) and shown here before any allow is usable, and is never cut again
      if (c.whole) {
        locked = () => !ticket;
        const size = `${c.whole.lines} line${c.whole.lines === 1 ? "" : "s"}, ${c.whole.chars} characters`;
        const offers = !Array.isArray(c.allows) || c.allows.length > 0;  // (a request cut past 4 MiB: Deny only)
        const preview = `This request is too large for the card (${size}): above is a preview, not all of it.` +
          (offers ? ` ${allowWord} is usable once the whole ${noun} is loaded and shown here.` : "");
        const note = el("div", { class: "note whole-note", role: "status" }, preview);
        const load = el("button", { type: "button", class: "ghost expand", "data-act": "load-whole" }, `load the whole ${noun} (${size})`);
        load.addEventListener("click", async () => {
          load.disabled = true; msg.textContent = ""; note.textContent = `loading the whole ${noun}…`;
          try {
            const q = new URLSearchParams({ gate: c.gate_id, shown: c.shown });
            const res = await fetch(url(`/api/s/${encodeURIComponent(c.cascade_id)}/whole?${q}`), { credentials: "omit", cache: "no-store" });
            const data = await res.json().catch(() => ({}));
            if (!res.ok) throw new Error(data.error || ("HTTP " + res.status));
            const digest = typeof data.full === "string" ? await sha256Hex(data.full) : "";
            if (typeof data.full !== "string" || typeof data.ticket !== "string" || (digest !== null && digest !== c.whole.sha256)) {
              throw new Error("the text loaded is not the one this card names (its SHA-256 differs): deny it, or reload the page");
            }
            cmd.textContent = sign + data.full;
            cmd.classList.add("whole", "huge");
            ticket = data.ticket;
            load.remove();
            note.textContent = `The whole ${noun} is shown above (${size}, SHA-256 ${c.whole.sha256.slice(0, 16)}…): scroll it to read all of it.`;
            if (!node.classList.contains("sent")) unlock();
          } catch (e) {
            note.textContent = preview;
            msg.textContent = "not loaded: " + e.message;
            load.disabled = false;
          }
        });
        node.append(note, load);
      }
      if (c.cwd) node.append(el("div", { class: "cwd" }, "in " + c.cwd));
      for (const line of c.cwd_notes || []) node.append(el("div", { class: "cwd-note" }, line));
      if (c.description) node.append(el("div", { class: "note" }, c.description));
      if (c.sandbox) node.append(el("div", { class: "note sandbox" },
        "agy asks to run it outside its sandbox: an allow here does not grant that (sandboxOverride is not sent)"));
      // an MCP server asks for content (c.content): the human types it; the core checks it against the
      // server's schema before anything is sent, and nothing is ever filled in for them
      let content = null;
      if (c.content) {
        if (c.content.schema) node.append(el("div", { class: "note" }, "the schema it asks with:"),
          el("pre", { class: "cmd schema" }, c.content.schema));
        content = el("textarea", { class: "content-json", rows: "3", spellcheck: "false",
          "aria-label": "the content to send (a JSON object)", placeholder: '{"field": "value"}' });
        node.append(content);
      }
      // a reason only where agy's answer carries one (c.deny_reason): agy's runCommand answer has none
      const why = c.deny_reason ? el("input", { class: "deny-reason", type: "text", maxlength: "2000",
        "aria-label": c.review ? "why you reject (optional, agy is told)" : "why you deny (optional, agy is told)",
        placeholder: "why? (optional, agy is told)" }) : null;
      const deny = () => (why && why.value.trim() ? send({ deny: why.value.trim() }) : send("deny"));
      if (why) why.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); deny(); } });
      // "edit command" (a gate agy lets the human edit): what is typed is what the card shows and runs
      let edit = null;
      const edited = () => (edit && !edit.hidden && edit.value !== c.edit_from ? edit.value : "");
      if (c.edit_from !== undefined) {
        edit = el("textarea", { class: "edit-cmd", rows: "2", hidden: true, spellcheck: "false",
          "aria-label": "the command to run (edited)" });
        edit.value = c.edit_from;
        const shownNow = () => {
          const text = edited();
          cmd.textContent = sign + (text ? visibleText(text) : c.command);
          cmd.classList.toggle("edited", !!text);
        };
        edit.addEventListener("input", shownNow);
        const toggle = el("button", { type: "button", class: "ghost", "data-act": "edit", "aria-expanded": "false" }, "Edit command");
        toggle.addEventListener("click", () => {
          edit.hidden = !edit.hidden;
          toggle.setAttribute("aria-expanded", String(!edit.hidden));
          toggle.textContent = edit.hidden ? "Edit command" : "Keep agy's command";
          shownNow();
          if (!edit.hidden) edit.focus();
        });
        node.append(edit);
        node.append(toggle);
      } else if (c.no_edit) node.append(el("div", { class: "note" }, "Edit command: " + c.no_edit));
      // one allow per scope the gate offers, never another: none where it offers none (a request cut
      // past 4 MiB can be denied only); a plain allow only for a card that says nothing of its allows
      const allows = Array.isArray(c.allows) ? c.allows : [{ scope: "once", label: "Allow once" }];
      const allow = (scope) => {
        if (locked()) { msg.textContent = `not sent: load the whole ${noun} first (the card shows a preview)`; return; }
        const command = edited();
        if (edit && !edit.hidden && !command.trim() && edit.value !== c.edit_from) { msg.textContent = "not sent: an edited command cannot be empty"; return; }
        send(command ? { allow: { scope, command } } : scope === "once" ? "allow" : { allow: { scope } });
      };
      const seen = c.approval_key ? approvals.get(approvedKey(c)) || 0 : 0;
      if (c.proposal && seen >= K_APPROVALS) {
        node.append(proposalBox(c, `You approved this exact command ${seen} times in this session: ` +
          "a rule could answer it for you. Edit it if you like; nothing is saved unless you click Save."));
      }
      const accept = () => {
        if (!content.value.trim()) { msg.textContent = "not sent: type the content it asks for (a JSON object), or " + (c.deny_label || "Decline"); return; }
        send({ accept: content.value });
      };
      node.append(el("div", { class: "actions" },
        allows.map((a, i) => el("button", { type: "button", class: i === 0 ? "allow" : "allow lasting", "data-act": "allow",
          "data-scope": a.scope, disabled: locked(), on: { click: () => allow(a.scope) } }, a.label)),
        content ? el("button", { type: "button", class: "allow", "data-act": "allow", "data-scope": "content",
          on: { click: accept } }, c.content.label || "Accept") : null,
        el("button", { type: "button", class: "deny", "data-act": "deny", on: { click: deny } }, c.deny_label || (c.review ? "Reject" : "Deny")),
        why,
        allows.length || content ? el("span", { class: "key" }, "a") : null, el("span", { class: "key" }, "d")), msg);
      node.addEventListener("submit", (ev) => ev.preventDefault());
      return node;
    }
    (c.questions || []).forEach((q, qi) => {
      const name = c.gate_id + ":" + qi;
      node.append(el("div", { class: "question" }, q.question));
      for (const line of q.notes || []) node.append(el("div", { class: "cwd-note" }, line));
      if (q.multi) node.append(el("div", { class: "note" }, "choose one or more"));
      node.append(el("div", { class: "options" }, q.options.map((o, i) =>
        el("label", {},
          el("input", { type: q.multi ? "checkbox" : "radio", name, value: o.id, "data-q": qi }),
          el("span", {}, o.text),
          ...(o.notes || []).map((line) => el("span", { class: "cwd-note" }, " " + line)),
          i < 9 ? el("span", { class: "key" }, String(i + 1)) : null))));
      node.append(el("input", { class: "write-in", type: "text", "data-q": qi, "aria-label": "your own answer",
        placeholder: q.options.length ? "…or write your own answer" : "your answer" }));
    });
    node.append(el("div", { class: "actions" },
      el("button", { type: "submit", class: "primary", "data-act": "answer" }, "Answer"),
      el("button", { type: "button", "data-act": "decline", on: { click: () => send("decline") } }, "Decline")), msg);
    node.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const questions = (c.questions || []).map((q, qi) => ({
        choices: [...node.querySelectorAll(`input[data-q="${qi}"]:checked`)].map((i) => i.value),
        write_in: (node.querySelector(`input.write-in[data-q="${qi}"]`) || {}).value || "",
      }));
      send({ questions });
    });
    return node;
  }

  // ---------------------------------------------------------------- a session
  function sessionHead(row) {
    $("s-state").className = "chip st-" + row.state;
    $("s-state").textContent = LABEL[row.state];
    $("s-title").textContent = titleOf(row);
    $("s-meta").textContent = [row.model, "↑" + k(row.tokens_in) + " ↓" + k(row.tokens_out), ago(row.last_activity)]
      .filter(Boolean).join(" · ");
    $("composer").hidden = !!row.parent_id;
  }

  function renderPinned() {
    const mine = board.cards.filter((c) => c.cascade_id === opened);
    const known = new Set(mine.map((c) => c.gate_id));
    for (const c of pending.values()) if (!known.has(c.gate_id)) mine.push(c);
    const box = $("s-cards");
    const have = new Map([...box.children].map((n) => [n.dataset.gate, n]));
    for (const [id, n] of have) if (!mine.some((c) => c.gate_id === id)) n.remove();
    for (const c of mine) if (!have.has(c.gate_id)) box.append(card(c, false));
  }

  const nodes = new Map();
  function put(key, make) {
    let n = nodes.get(key);
    if (!n) { n = make(); nodes.set(key, n); $("stream").append(n); }
    return n;
  }
  function line(text, level) { $("stream").append(el("div", { class: "line " + (level || "") }, text)); }

  function onEvent(e) {
    const stream = $("stream");
    const atEnd = stream.scrollHeight - stream.scrollTop - stream.clientHeight < 60;
    switch (e.type) {
      case "hello": nodes.clear(); pending.clear(); stream.replaceChildren(); $("s-cards").replaceChildren();
        if (e.error) line("not connected: " + e.error, "error"); break;
      case "user_message": stream.append(el("div", { class: "msg user" }, e.text)); break;
      case "text_delta": put("t:" + e.message_id, () => el("div", { class: "msg assistant streaming" })).append(e.delta); break;
      case "reasoning_delta": {
        const d = put("r:" + e.message_id, () => el("details", { class: "reasoning" }, el("summary", {}, "thinking"), el("div", {})));
        d.lastChild.append(e.delta); break;
      }
      case "assistant_message": {
        const n = put("t:" + e.message_id, () => el("div", { class: "msg assistant" }));
        n.classList.remove("streaming"); if (e.is_error) n.classList.add("error");
        n.textContent = e.text; break;
      }
      case "tool_call": {
        const v = e.view || {};
        const body = el("div", { class: "tool-body" });
        if (v.command) body.append(el("pre", { class: "cmd" }, "$ " + v.command), v.cwd ? el("div", { class: "cwd" }, "in " + v.cwd) : "");
        else if (v.path) body.append(el("div", { class: "cwd" }, v.path));
        if (v.diff && v.diff.length) body.append(el("div", { class: "diff" }, v.diff.map(([kind, text]) => el("div", { class: kind }, text))));
        if (!v.command && !v.path && !(v.diff && v.diff.length) && e.name !== "ask_question") {
          const args = Object.entries(e.arguments || {}).filter(([key]) => !["toolSummary", "toolAction"].includes(key)).slice(0, 6);
          for (const [key, val] of args) body.append(el("div", { class: "cwd" }, key + ": " + (typeof val === "string" ? val : JSON.stringify(val)).slice(0, 300)));
        }
        put("c:" + e.call_id, () => el("div", { class: "tool" },
          el("div", { class: "tool-head" }, el("span", { class: "tool-name" }, e.name), el("span", { class: "tool-status wait" }, "…")), body));
        break;
      }
      case "tool_result": {
        const n = put("c:" + e.call_id, () => el("div", { class: "tool" },
          el("div", { class: "tool-head" }, el("span", { class: "tool-name" }, e.name), el("span", { class: "tool-status" })), el("div", { class: "tool-body" })));
        const status = n.querySelector(".tool-status");
        status.className = "tool-status " + (e.is_error ? "err" : "ok");
        status.textContent = e.is_error ? "✗ failed" : "✓ done";
        n.lastChild.append(e.output ? el("pre", { class: "tool-out" }, e.output) : el("div", { class: "note" }, "(no output)"));
        break;
      }
      case "gate_opened": pending.set(e.gate_id, { ...e.card, title: "" }); renderPinned();
        line(e.card.ask, "warning"); break;
      case "gate_withdrawn": pending.delete(e.gate_id); renderPinned(); line("· " + (e.reason || "answered"));
        if (e.decided) stream.append(el("div", { class: "line decided" }, "· " + e.decided));
        if (!$("history").hidden) showHistory(true);
        break;
      case "status": if (e.status === "failed") line("the turn failed" + (e.reason ? ": " + e.reason : ""), "error"); break;
      case "subagent": stream.append(el("div", { class: "line" }, "sub-agent started · ",
        el("a", { href: "#", on: { click: (ev) => { ev.preventDefault(); openSession(e.child_cascade_id); } } }, "open " + short(e.child_cascade_id)))); break;
      case "notice": line(e.text, e.level); break;
      case "ended": line("the session ended" + (e.error ? ": " + e.error : ""), "error"); break;
      default: break;
    }
    if (atEnd || e.type === "caught_up") stream.scrollTop = stream.scrollHeight;
  }

  function openSession(id) {
    if (sessionSource) sessionSource.close();
    opened = id; selected = id;
    $("home").hidden = true; $("session").hidden = false;
    const row = board.rows.find((r) => r.cascade_id === id);
    if (row) sessionHead(row);
    renderRows();
    pending.clear();
    showHistory(false);
    sessionSource = new EventSource(url(`/api/s/${encodeURIComponent(id)}/events`));
    sessionSource.onmessage = (m) => onEvent(JSON.parse(m.data));
    $("stream").focus();
  }
  // the conversation's decisions (GET /api/s/ID/history: the decision ledger), newest first
  async function showHistory(open) {
    const box = $("history"), btn = $("history-btn");
    box.hidden = !open; btn.setAttribute("aria-pressed", String(open));
    if (!open || !opened) return;
    const id = opened;
    box.replaceChildren(el("div", { class: "note" }, "reading the decision ledger…"));
    let rows = [];
    try {
      const res = await fetch(url(`/api/s/${encodeURIComponent(id)}/history`), { credentials: "omit", cache: "no-store" });
      const data = await res.json().catch(() => ({}));
      if (!res.ok) throw new Error(data.error || ("HTTP " + res.status));
      rows = data.rows || [];
    } catch (err) {
      if (opened === id) box.replaceChildren(el("div", { class: "line error" }, "history: " + err.message));
      return;
    }
    if (opened !== id) return;
    if (!rows.length) { box.replaceChildren(el("div", { class: "note" }, "No decisions recorded for this conversation yet.")); return; }
    const head = el("tr", {}, ...["time", "asked", "verdict", "scope", "who / where"].map((h) => el("th", {}, h)));
    const body = rows.map((r) => el("tr", { class: "h-row" },
      el("td", { class: "h-time" }, r.time ? new Date(r.time).toLocaleTimeString() : ""),
      el("td", { class: "h-shown" }, r.shown, r.ran ? el("div", { class: "h-ran" }, r.ran) : null),
      el("td", { class: "h-verdict" }, r.verdict + (r.taken === false ? " (not taken)" : "")),
      el("td", { class: "h-scope" }, r.scope),
      el("td", { class: "h-who" }, r.decided)));
    box.replaceChildren(el("table", { class: "h-table" }, el("thead", {}, head), el("tbody", {}, ...body)));
  }
  $("history-btn").addEventListener("click", () => showHistory($("history").hidden));

  function closeSession() {
    if (sessionSource) sessionSource.close();
    sessionSource = null; opened = null;
    $("session").hidden = true; $("home").hidden = false;
    renderHome(); $("rows").focus();
  }

  // ---------------------------------------------------------------- input
  $("composer").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const text = $("turn").value;
    if (!text.trim() || !opened) return;
    $("send").disabled = true; $("composer-msg").textContent = "";
    try { await post(`/api/s/${encodeURIComponent(opened)}/send`, { text }); $("turn").value = ""; }
    catch (e) { $("composer-msg").textContent = e.message; }
    finally { $("send").disabled = false; }
  });
  async function interrupt() {
    if (!opened) return;
    try { await post(`/api/s/${encodeURIComponent(opened)}/interrupt`, {}); line("interrupt sent"); }
    catch (e) { $("composer-msg").textContent = e.message; }
  }
  $("stop").addEventListener("click", interrupt);
  $("back").addEventListener("click", closeSession);
  $("help-btn").addEventListener("click", () => { $("help").hidden = false; $("help-close").focus(); });
  $("help-close").addEventListener("click", () => { $("help").hidden = true; });
  $("notify").addEventListener("click", async () => {
    if (!("Notification" in window)) { $("notify").textContent = "no notifications here"; return; }
    const p = await Notification.requestPermission();
    $("notify").textContent = p === "granted" ? "Notifications on" : "Notifications blocked";
  });
  if ("Notification" in window && Notification.permission === "granted") $("notify").textContent = "Notifications on";

  function firstCard() {
    const scope = opened ? $("s-cards") : $("cards");
    return scope.querySelector(".card:not(.sent)");
  }
  document.addEventListener("keydown", (ev) => {
    const typing = ev.target.matches("textarea, input[type=text]");
    if (ev.key === "Escape") {
      if (!$("help").hidden) { $("help").hidden = true; return; }
      if (typing) { ev.target.blur(); return; }
      if (opened) closeSession();
      return;
    }
    if (ev.ctrlKey && ev.key === "Enter" && ev.target === $("turn")) { $("composer").requestSubmit(); return; }
    if (ev.ctrlKey && ev.key === ".") { ev.preventDefault(); interrupt(); return; }
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const items = order().filter((i) => i.row).map((i) => i.row.cascade_id);
    const at = items.indexOf(selected);
    if (ev.key === "j" || ev.key === "ArrowDown") { selected = items[Math.min(items.length - 1, at + 1)] || selected; renderRows(); ev.preventDefault(); }
    else if (ev.key === "k" || ev.key === "ArrowUp") { selected = items[Math.max(0, at - 1)] || selected; renderRows(); ev.preventDefault(); }
    else if (ev.key === "Enter" && ev.target.closest && !ev.target.closest("button, a, form") && selected) { openSession(selected); }
    else if (ev.key === "/" && opened) { ev.preventDefault(); $("turn").focus(); }
    else if (ev.key === "?") { $("help").hidden = false; $("help-close").focus(); }
    else if (ev.key === "a" || ev.key === "d") {
      const c = firstCard();
      const b = c && c.querySelector(`button[data-act="${ev.key === "a" ? "allow" : "deny"}"]`);
      if (b) { b.focus(); b.click(); }
    } else if (/^[1-9]$/.test(ev.key)) {
      const c = firstCard();
      const input = c && c.querySelectorAll("input[data-q]:not(.write-in)")[Number(ev.key) - 1];
      if (input) { input.checked = input.type === "checkbox" ? !input.checked : true; input.focus(); }
    }
  });
  setInterval(() => {
    for (const n of document.querySelectorAll(".row-when")) n.textContent = ago(Number(n.dataset.t));
  }, 5000);

  // ---------------------------------------------------------------- the board stream
  function connect() {
    const source = new EventSource(url("/api/board/events"));
    source.onopen = () => { $("conn").textContent = "live"; $("conn").className = "conn"; };
    source.onmessage = (m) => applyBoard(JSON.parse(m.data));
    source.onerror = () => { $("conn").textContent = "reconnecting…"; $("conn").className = "conn off"; };
  }
  connect();
})();
