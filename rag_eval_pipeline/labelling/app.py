"""The labelling page: one item at a time, keyboard first, every label fsynced before the page says "saved".

Layout: the item (question, answer or claim, the retrieved chunks) on the left; on the right a panel that
stays in view while the chunks scroll (``position: sticky``; below the item on a narrow screen): the label
buttons with their keys, what each label means (:mod:`rag_eval_pipeline.labelling.definitions`, one
verdict family per calibration level: "attributable" is defined there), the note and quote fields and the
shortcuts. Chunks are collapsible (``<details>``): the first three and every cited one start open; ``e``
opens or closes them all.

Routes: ``GET /`` (to the first open item), ``GET /item/{pos}``, ``GET /done``, ``POST /api/label``
(JSON {pos, verdict, note, quote, content_sha256}), ``POST /api/undo``, ``GET /healthz``. The page is
self-contained (inline CSS and a small inline script for the shortcuts; no external asset) and is
served on 127.0.0.1 only: it shows answers and chunk texts.
"""

from __future__ import annotations

import html
import json
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
)
from starlette.routing import Route

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.jsonio import loads as strict_json
from rag_eval_pipeline.core.labelling import LabelItem
from rag_eval_pipeline.labelling.definitions import family_for
from rag_eval_pipeline.labelling.session import LabellingSession, Progress
from rag_eval_pipeline.local_guard import LocalOnly

CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2026;background:#f6f7f9}
header{background:#23324a;color:#fff;padding:8px 18px;display:flex;flex-wrap:wrap;gap:8px 24px;align-items:baseline}
header b{font-size:18px} main{max-width:1100px;margin:0 auto;padding:12px 18px;box-sizing:border-box}
main.item{max-width:1440px;display:grid;grid-template-columns:minmax(0,1fr) minmax(280px,380px);gap:0 18px;
align-items:start}
#panel{position:sticky;top:8px;max-height:calc(100vh - 40px);overflow:auto;box-sizing:border-box}
#panel h2{font-size:16px;margin:2px 0 4px} dl.defs{margin:6px 0} dl.defs dt{font-weight:600;margin-top:6px}
dl.defs dd{margin:0 0 2px 0;font-size:13px;color:#30343c} #panel .meta{font-size:13px;color:#5a6070}
@media (max-width:900px){main.item{grid-template-columns:minmax(0,1fr)}
#panel{top:auto;bottom:0;max-height:48vh;box-shadow:0 -2px 8px rgba(0,0,0,.15)}}
details.chunk>summary{cursor:pointer;list-style-position:outside} details.chunk:not([open])>summary{color:#5a6070}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#eef0f3;padding:6px 8px;border-radius:4px}
.card{background:#fff;border:1px solid #d8dbe0;border-radius:6px;padding:10px 14px;margin:10px 0}
.q{font-size:17px;font-weight:600} .claim.current{background:#fff3c4;outline:2px solid #e0b400}
.claims li{margin:2px 0} .chunk{border-top:1px solid #e4e6ea;padding:6px 0}
.chunk .meta{color:#5a6070;font-size:13px} .status-withdrawn,.status-replaced{color:#a33;font-weight:600}
.keys button{font-size:15px;margin:0 8px 6px 0;padding:6px 12px}
kbd{border:1px solid #999;border-radius:3px;padding:0 4px}
#status{font-weight:600;margin-left:12px} .err{color:#a00} .ok{color:#176b2c} .judge{background:#eef3ff}
input[type=text]{width:100%;box-sizing:border-box;font-size:14px;padding:4px}
"""

SCRIPT = """
const S = JSON.parse(document.getElementById('state').textContent);
const status = document.getElementById('status');
function say(text, cls){ status.textContent = text; status.className = cls || ''; }
async function post(url, body){
  const r = await fetch(url, {method:'POST', headers:{'Content-Type':'application/json'},
                              body: JSON.stringify(body||{})});
  let data = {}; try { data = await r.json(); } catch(e) {}
  if (!r.ok || !data.ok) { say((data && data.error) || ('error ' + r.status), 'err'); return null; }
  return data;
}
async function label(i){
  const opt = S.options[i]; if (!opt) return;
  say('saving ' + opt.label + ' ...');
  const note = document.getElementById('note').value;
  const q = document.getElementById('quote'); const quote = q ? q.value : null;
  const data = await post('/api/label',
                          {pos: S.pos, verdict: opt.raw, note: note, quote: quote, content_sha256: S.sha});
  if (data) {
    say('saved: ' + opt.label + ' (' + data.done + ' / ' + data.total + ')', 'ok');
    location.href = data.next;
  }
}
function toggleChunks(){
  const all = Array.from(document.querySelectorAll('details.chunk'));
  const open = !all.every(d => d.open);
  all.forEach(d => { d.open = open; });
}
async function undo(){
  say('undoing ...');
  const data = await post('/api/undo', {});
  if (data) { say(data.message, 'ok'); location.href = data.next; }
}
document.addEventListener('mouseup', () => {
  const q = document.getElementById('quote'); if (!q) return;
  const sel = window.getSelection(); const text = sel ? sel.toString().trim() : '';
  const parent = sel && sel.anchorNode ? sel.anchorNode.parentElement : null;
  if (text && parent && parent.closest('.ctext')) q.value = text;
});
document.addEventListener('keydown', (e) => {
  const t = e.target;
  if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA')) { if (e.key === 'Escape') t.blur(); return; }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (/^[1-9]$/.test(e.key)) { e.preventDefault(); label(parseInt(e.key, 10) - 1); }
  else if (e.key === 'n') { e.preventDefault(); if (S.next_url) location.href = S.next_url; }
  else if (e.key === 'b') { e.preventDefault(); if (S.back_url) location.href = S.back_url; }
  else if (e.key === 'u') { e.preventDefault(); undo(); }
  else if (e.key === 'e') { e.preventDefault(); toggleChunks(); }
  else if (e.key === '/') { e.preventDefault(); document.getElementById('note').focus(); }
});
"""


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text))


def _page(title: str, head: str, body: str, state: dict | None = None, main_class: str = "") -> str:
    script = ""
    if state is not None:
        # JSON inside <script type=application/json>: escape "<" so no text can close the element
        blob = json.dumps(state, ensure_ascii=False).replace("<", "\\u003c")
        script = f'<script id="state" type="application/json">{blob}</script><script>{SCRIPT}</script>'
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title>"
            f"<style>{CSS}</style></head><body><header>{head}</header>"
            f"<main{f' class={main_class}' if main_class else ''}>{body}</main>{script}</body></html>")


def _header(s: LabellingSession, prog: Progress) -> str:
    return (f"<b>Hand labels</b><span id=progress>{prog.done} / {prog.total}</span>"
            f"<span>labeller {_e(s.labeller)}</span><span>level {_e(s.level)}</span>"
            f"<span>groups {_e(', '.join(s.groups) or '(none)')}</span>"
            + ("<span>judge shown (adjudication)</span>" if s.show_judge else "<span>blind</span>"))


def _item_html(s: LabellingSession, it: LabelItem, pos: int, prog: Progress) -> str:
    parts = [f'<div class=card id=item data-system="{_e(it.system)}" data-question-id="{_e(it.question_id)}" '
             f'data-claim-id="{_e(it.claim_id or "")}" data-pos="{pos}">'
             f'<div class=meta>item {pos + 1} of {len(s.sample)} · system {_e(it.system)} · '
             f'question {_e(it.question_id)}' + (f" · claim {_e(it.claim_id)}" if it.claim_id else "") + "</div>",
             f'<div class=q id=question>{_e(it.question)}</div></div>']
    if s.level == "nugget_coverage":
        parts.append(f'<div class=card><div>Nugget (a reviewed fact of the reference answer) to look for:</div>'
                     f'<div class="claim current" id=claim>{_e(it.claim)}</div><div class=meta>The answer (citation '
                     f'markers removed; select the words that state the nugget as the quote):</div>'
                     f'<div class=ctext id=answer>{_e(it.answer)}</div></div>')
    elif it.claim_id is not None:
        lis = "".join(f'<li class="claim{" current" if c == it.claim else ""}">{_e(c)}</li>' for c in it.claims)
        parts.append(f'<div class=card><div>Claim to label:</div><div class="claim current" id=claim>{_e(it.claim)}'
                     f'</div><div class=meta>The whole answer, split into the judge\'s claims:</div>'
                     f'<ol class=claims id=answer>{lis}</ol></div>')
    else:
        parts.append(f'<div class=card><div>Answer:</div><div id=answer>{_e(it.answer)}</div></div>')
    if s.show_judge:
        rows = "".join(f"<li>{_e(c['claim'])}: <b>{_e(c['verdict'])}</b>"
                       + (f" — quote: “{_e(c['quote'])}”" if c.get("quote") else "") + "</li>" for c in it.judge_claims)
        parts.append(f'<div class="card judge" id=judge>Judge: <b>{_e(it.judge_label)}</b><ul>{rows}</ul></div>')
    open_ranks = 3  # the first chunks start open (and every cited one): the rest one click (or e) away
    chunks = "".join(
        f'<details class=chunk data-chunk-id="{_e(h["chunk_id"])}"'
        + (" open" if i < open_ranks or h["chunk_id"] in it.cited else "")
        + f'><summary class=meta>#{_e(h["rank"])} · {_e(h["chunk_id"])} · {_e(h["title"] or "(no title)")} · '
        f'<span class="status-{_e(h["status"])}">{_e(h["status"] or "not in snapshot")}</span>'
        + (" · cited" if h["chunk_id"] in it.cited else "") + f'</summary><div class=ctext>{_e(h["text"])}</div>'
        '</details>'
        for i, h in enumerate(it.chunks)) or "<div>No chunk retrieved.</div>"
    what = ("Cited chunks: judge the claim against these alone (click a title, or press <kbd>e</kbd>, to open or "
            "close them):" if s.level == "citation_support" else
            "Retrieved chunks (rank order; click a title, or press <kbd>e</kbd>, to open or close them):")
    if s.level != "nugget_coverage":
        parts.append(f'<div class=card id=chunks><div>{what}</div>{chunks}</div>')
    return "".join(parts)


def _panel(s: LabellingSession, it: LabelItem, prog: Progress) -> str:
    """The sticky panel: your current label, the question to answer, each label's key, button and definition,
    the quote and note fields, the shortcuts."""
    family = family_for(s.level)
    current = prog.labels.get(it.key)
    mine = ""
    if current is not None:
        mine = f'<div class=ok id=current>Your label: {_e(current["verdict"])} ({_e(current["labelled_at"])})</div>'
    elif it.key in prog.stale:
        mine = ('<div class=err id=current>Your earlier label is stale: the question, answer or chunks changed since. '
                'Label it again.</div>')
    buttons = "".join(f'<button onclick="label({i})"><kbd>{i + 1}</kbd> {_e(lab)}</button>'
                      for i, (_raw, lab) in enumerate(s.options))
    defs = "".join(f"<dt><kbd>{i + 1}</kbd> {_e(lab)}</dt><dd>{_e(family.definition(lab) if family else '')}</dd>"
                   for i, (_raw, lab) in enumerate(s.options))
    head = (f'<h2 id=family-title>{_e(family.title)}</h2><div class=meta id=family-question>{_e(family.question)}'
            f'</div>' if family else "")
    source = (f'<div class=meta id=family-source>Look at: {_e(family.looks_at)}. Definitions after '
              f'{_e(family.source)}.</div>' if family else "")
    where, needed = (("the answer", "SUPPORTED and PARTIAL") if s.level == "nugget_coverage" else
                     ("a cited chunk", "SUPPORTED and PARTIAL") if s.level == "citation_support" else
                     ("a chunk", "SUPPORTED"))
    quote = (f'<div>Quote (select the supporting words in {where}; needed for {needed}): '
             f'<input type=text id=quote value="{_e((current or {}).get("quote") or "")}"></div>'
             if s.level != "response" else "")
    return (f'<aside class="card keys" id=panel>{mine}{head}<div id=buttons style="margin-top:6px">{buttons}</div>'
            f'<div id=status></div><dl class=defs id=definitions>{defs}</dl>{quote}<div>Note (optional, <kbd>/</kbd>):'
            f' <input type=text id=note value="{_e((current or {}).get("note") or "")}"></div>'
            '<div class=meta style="margin-top:6px"><kbd>n</kbd> next · <kbd>b</kbd> back · <kbd>u</kbd> undo your '
            'last label · <kbd>e</kbd> open / close the chunks · <kbd>Esc</kbd> leaves a text field</div>'
            f'{source}</aside>')


def _last_saved(s: LabellingSession, prog: Progress) -> str:
    if not prog.labels:
        return ""
    last = max(prog.labels.values(), key=lambda r: r["line"])
    key = "/".join(x for x in (last["system"], last["question_id"], last.get("claim_id")) if x)
    return f'<div class="meta ok" id=last-saved>Last saved: {_e(key)} = {_e(last["verdict"])}</div>'


def _is_json(request: Request) -> bool:
    return request.headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"


def build_app(session: LabellingSession) -> Starlette:
    """The Starlette application of one :class:`LabellingSession`."""
    s = session

    async def index(request: Request):
        pos = s.next_open()
        return RedirectResponse("/done" if pos is None else f"/item/{pos}", status_code=303)

    async def item(request: Request):
        try:
            pos = int(request.path_params["pos"])
        except ValueError:
            return PlainTextResponse("no such item", status_code=404)
        if not 0 <= pos < len(s.sample):
            return PlainTextResponse("no such item", status_code=404)
        prog = s.progress()
        it = s.sample[pos]
        state = {"pos": pos, "sha": it.content_sha256,
                 "options": [{"raw": raw, "label": lab} for raw, lab in s.options],
                 "next_url": f"/item/{(pos + 1) % len(s.sample)}", "back_url": f"/item/{(pos - 1) % len(s.sample)}"}
        body = f"<div id=content>{_last_saved(s, prog)}{_item_html(s, it, pos, prog)}</div>{_panel(s, it, prog)}"
        return HTMLResponse(_page(f"label {pos + 1}", _header(s, prog), body, state, main_class="item"))

    async def done(request: Request):
        prog = s.progress()
        left = prog.total - prog.done
        extra = (f"<p>{s.n_withheld} item(s) are not offered: they draw on chunks outside your groups.</p>"
                 if s.n_withheld else "")
        if left:
            body = (f'<div class=card><p id=summary>{prog.done} of {prog.total} items labelled; {left} still open.</p>'
                    f'<p><a href="/">Continue labelling</a></p>{extra}</div>')
        else:
            short = (f"<p>The sample holds every item there is ({prog.total} of the {s.n} asked).</p>"
                     if prog.total < s.n else
                     "<p>To label more, start the page again with a larger <code>--n</code> (the sample grows; "
                     "the items you labelled stay labelled).</p>")
            body = (f'<div class=card><p id=summary>Done: {prog.done} of {prog.total} items labelled by '
                    f'{_e(s.labeller)}, saved in {_e(s.labels_path)}.</p>'
                    f'<p>Recompute the judge\'s calibration (Cohen\'s κ against these labels, and between people '
                    f'when two labelled the same items):</p><pre id=command>{_e(s.recompute_command())}</pre>'
                    f'{short}{extra}<p><a href="/item/0">Review your labels</a> (<kbd>u</kbd> undoes the last one)</p>'
                    '</div>')
        state = {"pos": -1, "sha": "", "options": [], "next_url": "/item/0" if s.sample else None,
                 "back_url": f"/item/{len(s.sample) - 1}" if s.sample else None}
        return HTMLResponse(_page("labelling done", _header(s, prog), body, state))

    async def api_label(request: Request):
        if not _is_json(request):
            return JSONResponse({"ok": False, "error": "expected Content-Type application/json"}, 415)
        try:
            body = strict_json(await request.body())
            pos = int(body.get("pos"))
        except (ValueError, TypeError, AttributeError):  # JsonError is a ValueError
            return JSONResponse({"ok": False, "error": "bad request: expected JSON with pos and verdict"}, 400)
        if not 0 <= pos < len(s.sample):
            return JSONResponse({"ok": False, "error": f"no item at position {pos}"}, 404)
        it = s.sample[pos]
        verdict = body.get("verdict")
        if verdict not in s.raw_labels():
            return JSONResponse({"ok": False, "error": f"verdict {verdict!r} is not one of {s.raw_labels()}"}, 400)
        if body.get("content_sha256") != it.content_sha256:
            return JSONResponse({"ok": False, "error": "this item changed since the page was loaded: reload it"}, 409)
        try:
            s.file.record(it, verdict, s.labeller, note=body.get("note"), quote=body.get("quote"))
        except InputError as exc:
            return JSONResponse({"ok": False, "error": str(exc)}, 400)
        prog = s.progress()
        nxt = s.next_open(after=pos, progress=prog)
        return JSONResponse({"ok": True, "saved": it.key_text, "done": prog.done, "total": prog.total,
                             "next": "/done" if nxt is None else f"/item/{nxt}"})

    async def api_undo(request: Request):
        if not _is_json(request):
            return JSONResponse({"ok": False, "error": "expected Content-Type application/json"}, 415)
        try:
            removed = s.file.remove_last(s.labeller, keys=s.position)
        except InputError as exc:
            return JSONResponse({"ok": False, "error": str(exc)}, 400)
        if removed is None:
            return JSONResponse({"ok": False, "error": "nothing to undo: you have no label on this sample"}, 400)
        key = (removed["system"], removed["question_id"]) + ((removed["claim_id"],) if s.level != "response" else ())
        return JSONResponse({"ok": True, "message": f"removed your label of {'/'.join(key)}",
                             "next": f"/item/{s.position[key]}"})

    async def healthz(request: Request):
        return PlainTextResponse("ok")

    # Only loopback host names (no DNS rebinding), JSON bodies only and no foreign Origin (no cross-site
    # posts): the rules every local server applies (rag_eval_pipeline/local_guard.py).
    return Starlette(middleware=[Middleware(LocalOnly, json_errors=True)],
                     routes=[
        Route("/", index), Route("/item/{pos}", item), Route("/done", done),
        Route("/api/label", api_label, methods=["POST"]), Route("/api/undo", api_undo, methods=["POST"]),
        Route("/healthz", healthz),
    ])
