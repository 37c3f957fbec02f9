"""The review queue as a web page for a team: a FastAPI app rendering HTML on the server.

Routes (``create_app(queue, host=...)``):

==========================================  =================================================
``GET  /signin``, ``POST /signin``          sign in with a reviewer token (open mode: a name)
``POST /signout``                           end the session
``GET  /?status=&repo=&language=&reason=    the queue, filtered; pending first, with claims
&older=&newer=&mine=``                      (``older``/``newer``: hours since the flag)
``GET  /tasks/{id}``                        one task: statement, diffs (the statement's
                                            quoted fragments marked), tests, versions, forms
``POST /tasks/{id}/claim`` ``/release``     claim the task / give the claim up
``POST /tasks/{id}/mend``                   save an edited statement / drop tests
``POST /tasks/{id}/approve`` ``/reject``    decide, with ``label``, ``severity`` and ``note``
``GET  /stats``                             throughput and agreement
==========================================  =================================================

Security (:mod:`repogym.datasets.review.auth`): every visitor has a session cookie
(HttpOnly, SameSite=Strict); every form carries the session's CSRF token and a POST without
the right one is refused (403); the reviewer's name is the session's, never a form field's.
When sign-in is required (a shared database, a reviewer added, or a non-loopback address),
pages redirect to ``/signin`` until the visitor signs in with a token; in open mode the
sign-in form asks only for a name, and every page says the queue is open.

Everything from the dataset is untrusted text: templates autoescape, diffs are escaped line
by line, and the only script is the page's own keyboard handler, allowed by a per-response
nonce in the Content-Security-Policy. Forms are parsed from urlencoded bodies with the
standard library.

Keys: ``j``/``k`` move, ``o``/Enter open, ``c`` claim, ``a`` approve, ``r`` reject (focuses
the note), ``e`` edit the statement, ``n`` next pending task, ``u`` back to the list.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs, quote, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import DictLoader, Environment
from markupsafe import Markup, escape
from starlette.concurrency import run_in_threadpool

from repogym.datasets.review.auth import (
    COOKIE,
    SESSION_HOURS,
    Reviewers,
    Session,
    SignInFailed,
    csrf_ok,
    sign_in_required,
)
from repogym.datasets.review.queue import (
    STATUS_FILTERS,
    DecisionLabel,
    ItemFilter,
    ReviewConflict,
    ReviewItem,
    ReviewQueue,
    ReviewState,
    Severity,
    StatementLeaks,
    UnknownReviewItem,
    age_text,
    check_reviewer,
)
from repogym.datasets.review.stats import review_stats
from repogym.errors import DatasetError, InfraError, InputError, RepogymError

MAX_FORM_BYTES = 64 * 1024
PAGE_ITEMS = 500  # rows on the list page; the count says how many match

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; padding: 0 1rem;
       max-width: 76rem; color: #222; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #ddd;
         vertical-align: top; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; }
nav { display: flex; gap: 1rem; align-items: center; margin-bottom: .8rem; }
nav form { display: inline; margin: 0; }
.mode { font-size: .9rem; color: #555; }
.statement { background: #f6f6f6; padding: .8rem; border-radius: 4px; }
.diff { background: #fafafa; padding: .6rem; border: 1px solid #eee; overflow-x: auto;
        font-family: ui-monospace, monospace; font-size: .85rem; }
.diff div { white-space: pre-wrap; word-break: break-all; }
.diff .add { background: #e6ffed; } .diff .del { background: #ffeef0; }
.diff .hunk { color: #6f42c1; } .diff .head { color: #555; font-weight: bold; }
mark.quoted { background: #ffd54f; outline: 1px solid #e0a800; }
.state-pending { color: #a60; } .state-approved { color: #070; } .state-rejected { color: #a00; }
.message { background: #e8f6e8; border: 1px solid #7b7; padding: .6rem; }
.error { background: #fbe9e9; border: 1px solid #d77; padding: .6rem; }
tr.selected { background: #e8f0fe; }
form.filters label { margin-right: .8rem; }
form label { margin: .4rem 0; }
textarea { width: 100%; }
textarea[name=note] { height: 4rem; } textarea[name=statement] { height: 12rem; }
.keys { color: #666; font-size: .85rem; }
"""

_LAYOUT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{% block title %}{% endblock %}</title>
<style nonce="{{ nonce }}">{{ styles }}</style></head>
<body><nav><a href="/">review queue</a><a href="/stats">stats</a>
{% if who %}<span id="who">signed in as <b>{{ who }}</b></span>
<form method="post" action="/signout"><input type="hidden" name="csrf" value="{{ csrf }}">
<button type="submit" id="signout">sign out</button></form>{% endif %}
<span class="mode" id="mode">{{ mode }}</span></nav>
{% if message %}<p class="message" id="message">{{ message }}</p>{% endif %}
{% if error %}<p class="error" id="error">error: {{ error }}</p>{% endif %}
{% block body %}{% endblock %}
<script nonce="{{ nonce }}">{{ script }}</script></body></html>
"""

_SIGNIN = """{% extends "layout.html" %}{% block title %}sign in{% endblock %}
{% block body %}<h1>Sign in</h1>
<form method="post" action="/signin" id="signin"><input type="hidden" name="csrf"
 value="{{ csrf }}">{% if open %}<label>your name <input name="name" required maxlength="255"
 autofocus></label>{% else %}<label>reviewer token <input type="password" name="token"
 required autofocus autocomplete="off"></label>{% endif %}
<button type="submit" id="signin-button">sign in</button></form>{% endblock %}
"""

_INDEX = """{% extends "layout.html" %}{% block title %}review queue{% endblock %}
{% block body %}<h1>Review queue</h1>
<form method="get" action="/" class="filters" id="filters">
<label>status <select name="status">{% for s in statuses %}<option{{ " selected" if
 s == f.status }}>{{ s }}</option>{% endfor %}</select></label>
{% for name in ("repo", "language", "reason") %}<label>{{ name }} <select name="{{ name }}">
<option value="">any</option>{% for v in facets[name] %}<option{{ " selected" if
 v == f[name] }}>{{ v }}</option>{% endfor %}</select></label>{% endfor %}
<label>older than <input name="older" size="4" value="{{ older }}">h</label>
<label>newer than <input name="newer" size="4" value="{{ newer }}">h</label>
<label><input type="checkbox" name="mine" value="1"{{ " checked" if mine }}> mine</label>
<button type="submit">filter</button></form>
<p>{{ total }} item(s){% if total > items|length %}, the first {{ items|length }} shown
 (filter to see others){% endif %}. <span class="keys">keys: j/k move · o open · c claim</span></p>
<table id="queue"><thead><tr><th>task</th><th>state</th><th>reason</th><th>repo</th>
<th>language</th><th>age</th><th>claimed by</th><th>reviews</th><th>decided by</th></tr>
</thead><tbody>
{% for it in items %}<tr class="item" data-id="{{ it.instance_id }}"
 data-url="{{ task_url(it.instance_id) }}">
<td><a href="{{ task_url(it.instance_id) }}">{{ it.instance_id }}</a></td>
<td class="state-{{ it.state.value }}">{{ it.state.value }}{{ " (disputed)" if it.disputed
 }}</td><td>{{ it.reason }}</td><td>{{ it.repo }}</td><td>{{ it.language }}</td>
<td>{{ age(it.flagged_at) }}</td><td class="claim">{{ it.holder(now) }}</td>
<td>{{ it.counted|length }}/{{ it.reviews_needed }}</td><td>{{ it.reviewer }}</td></tr>
{% else %}<tr><td colspan="9">nothing here</td></tr>{% endfor %}
</tbody></table>
<form method="post" id="claim-selected"><input type="hidden" name="csrf" value="{{ csrf }}">
</form>{% endblock %}
"""

_DETAIL = """{% extends "layout.html" %}{% block title %}{{ it.instance_id }}{% endblock %}
{% block body %}<h1>{{ it.instance_id }}</h1>
<p class="keys">keys: c claim · a approve · r reject · e edit · n next · u list</p>
<table><tr><th>state</th><td class="state-{{ it.state.value }}" id="state">{{ it.state.value }}
{% if it.reviewer %} by {{ it.reviewer }}{% endif %}{% if it.label %} ({{ it.label }},
 {{ it.severity }}){% endif %}</td></tr>
{% if it.note %}<tr><th>note</th><td><pre id="note">{{ it.note }}</pre></td></tr>{% endif %}
<tr><th>claim</th><td id="claim">{% if holder %}{{ holder }} until {{
 it.claimed_until.strftime("%H:%M") }} UTC{% else %}nobody{% endif %}</td></tr>
<tr><th>reviews</th><td id="reviews">{{ it.counted|length }} of {{ it.reviews_needed }}
{% if it.disputed %} (disputed: the next decision is final){% endif %}
{% if show_decisions %}<ul>{% for d in it.decisions %}<li>{{ d.reviewer }}: {{ d.action.value }}
 ({{ d.label.value }}, {{ d.severity.value }}) {{ d.note }}</li>{% endfor %}</ul>{% endif %}
</td></tr>
<tr><th>reason</th><td id="reason">{{ it.reason }}</td></tr>
<tr><th>detail</th><td><pre>{{ it.detail }}</pre></td></tr>
<tr><th>repo</th><td>{{ it.repo }} @ {{ it.task.base_commit }} ({{ it.language }})</td></tr>
<tr><th>kind</th><td>{{ it.task.kind.value }} ({{ it.task.generator }}
{%- if it.task.mutator %}, {{ it.task.mutator }}{% endif %})</td></tr>
<tr><th>flagged</th><td>{{ age(it.flagged_at) }} ago</td></tr></table>
{% if pending %}
{% if mine %}<form method="post" action="{{ url }}/release" id="release-form">
<input type="hidden" name="csrf" value="{{ csrf }}"><button type="submit" id="release">release
</button></form>{% elif not holder and not reviewed %}<form method="post"
 action="{{ url }}/claim" id="claim-form"><input type="hidden" name="csrf" value="{{ csrf }}">
<button type="submit" id="claim-button">claim</button></form>{% endif %}
{% if reviewed %}<p id="reviewed">You reviewed this task; it waits for another reviewer.</p>
{% elif mine %}<form method="post" id="decide"><input type="hidden" name="csrf"
 value="{{ csrf }}"><label>reason <select name="label" id="label">{% for l in labels %}
<option{{ " selected" if l == "sound" }}>{{ l }}</option>{% endfor %}</select></label>
<label>severity <select name="severity" id="severity">{% for s in severities %}<option>{{ s }}
</option>{% endfor %}</select></label>
<label>note<textarea name="note" id="note-input"></textarea></label>
<button type="submit" formaction="{{ url }}/approve" id="approve">Approve</button>
<button type="submit" formaction="{{ url }}/reject" id="reject">Reject</button></form>{% endif %}
{% endif %}
<h2>Statement{% if it.version %} (version {{ it.version }}){% endif %}</h2>
<pre class="statement" id="statement">{{ statement }}</pre>
{% if quoted %}<p id="quoted">The statement quotes the fix: {% for q in quoted %}
<mark class="quoted">{{ q }}</mark>{{ " · " if not loop.last }}{% endfor %}</p>{% endif %}
{% if pending and mine and not reviewed %}<details id="mend"{{ " open" if mend_open }}>
<summary>Mend: edit the statement, drop flaky tests</summary>
<form method="post" action="{{ url }}/mend" id="mend-form"><input type="hidden" name="csrf"
 value="{{ csrf }}"><textarea name="statement" id="statement-input">{{ draft }}</textarea>
<p>drop tests:</p>{% for t in it.task.FAIL_TO_PASS + it.task.PASS_TO_PASS %}<label><input
 type="checkbox" name="drop" value="{{ t }}"> <code>{{ t }}</code></label><br>{% endfor %}
<button type="submit" id="save-mend">save edit</button></form></details>{% endif %}
{% if it.versions %}<h2>Versions</h2><table id="versions"><tr><th>version</th><th>by</th>
<th>change</th><th>re-verified</th></tr><tr><td>0 (as flagged)</td><td>judge</td>
<td><pre>{{ it.original.problem_statement if it.original else "" }}</pre></td><td></td></tr>
{% for v in it.versions %}<tr><td>{{ v.version }}</td><td>{{ v.editor }}</td>
<td>{{ v.summary }}</td><td>{{ v.verified or "not yet" }} {{ v.verify_detail }}</td></tr>
{% endfor %}</table>{% endif %}
<h2>Gold patch (broken → fixed)</h2>{{ diff(it.task.patch, quoted) }}
<h2>Bug patch (base → broken)</h2>{{ diff(it.task.bug_patch, ()) }}
{% if it.task.test_patch %}<h2>Test patch</h2>{{ diff(it.task.test_patch, ()) }}{% endif %}
<h2>FAIL_TO_PASS</h2><ul id="f2p">{% for t in it.task.FAIL_TO_PASS %}<li><code>{{ t }}</code>
</li>{% else %}<li>none</li>{% endfor %}</ul>
<h2>PASS_TO_PASS</h2><ul id="p2p">{% for t in it.task.PASS_TO_PASS %}<li><code>{{ t }}</code>
</li>{% else %}<li>none</li>{% endfor %}</ul>
<h2>Evidence</h2><table id="evidence">{% for k, v in it.task.evidence|dictsort %}
<tr><th>{{ k }}</th><td><pre>{{ v }}</pre></td></tr>{% else %}<tr><td>none</td></tr>
{% endfor %}</table>
{% if next_url %}<a href="{{ next_url }}" id="next">next pending</a>{% endif %}{% endblock %}
"""

_STATS = """{% extends "layout.html" %}{% block title %}review stats{% endblock %}
{% block body %}<h1>Review stats</h1><pre id="stats">{{ lines }}</pre>
<table id="agreement"><tr><th>flag reason</th><th>pairs</th><th>same action</th>
<th>same reason</th><th>kappa</th></tr>{% for a in stats.agreement %}<tr>
<td>{{ a.reason }}</td><td>{{ a.pairs }}</td><td>{{ "%.0f%%"|format(a.action * 100) }}</td>
<td>{{ "%.0f%%"|format(a.label * 100) }}</td><td>{{ "%.2f"|format(a.kappa) if a.kappa is
 not none else "-" }}</td></tr>{% else %}<tr><td colspan="5">no task has two reviews yet
 (REPOGYM_REVIEW_DOUBLE_FRACTION, or repogym review double ID)</td></tr>{% endfor %}</table>
{% endblock %}
"""

_SCRIPT = """
(() => {
  const rows = [...document.querySelectorAll('tr.item')];
  let at = rows.length ? 0 : -1;
  const show = () => rows.forEach((r, i) => r.classList.toggle('selected', i === at));
  show();
  const typing = (e) => ['INPUT', 'TEXTAREA', 'SELECT'].includes(e.target.tagName);
  const click = (id) => { const el = document.getElementById(id); if (el) el.click(); };
  document.addEventListener('keydown', (e) => {
    if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key;
    if (rows.length && (k === 'j' || k === 'k')) {
      at = Math.max(0, Math.min(rows.length - 1, at + (k === 'j' ? 1 : -1))); show();
    } else if (rows.length && (k === 'o' || k === 'Enter') && at >= 0) {
      location.href = rows[at].dataset.url;
    } else if (rows.length && k === 'c' && at >= 0) {
      const f = document.getElementById('claim-selected');
      f.action = rows[at].dataset.url + '/claim'; f.submit();
    } else if (k === 'c') { click('claim-button');
    } else if (k === 'a') { click('approve');
    } else if (k === 'r') { const n = document.getElementById('note-input');
      if (n) { e.preventDefault(); n.focus(); }
    } else if (k === 'e') { const m = document.getElementById('mend');
      if (m) { e.preventDefault(); m.open = true; document.getElementById('statement-input').focus(); }
    } else if (k === 'n') { click('next');
    } else if (k === 'u') { location.href = '/'; }
  });
})();
"""


def task_url(instance_id: str) -> str:
    """The detail page's path for an id (percent-encoded: ids are data)."""
    return "/tasks/" + quote(instance_id, safe="")


def spans(text: str, fragments: Iterable[str]) -> list[tuple[int, int]]:
    """The merged ``(start, end)`` spans of ``text`` where any fragment occurs."""
    found = []
    for frag in {f.strip() for f in fragments if f.strip()}:
        start = text.find(frag)
        while start >= 0:
            found.append((start, start + len(frag)))
            start = text.find(frag, start + 1)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def marked(text: str, fragments: Iterable[str]) -> Markup:
    """``text`` escaped, with every occurrence of a fragment in ``<mark class="quoted">``."""
    out, at = [], 0
    for start, end in spans(text, fragments):
        out += [str(escape(text[at:start])), '<mark class="quoted">',
                str(escape(text[start:end])), "</mark>"]
        at = end
    out.append(str(escape(text[at:])))
    return Markup("".join(out))


def diff_html(diff: str, fragments: Iterable[str] = ()) -> Markup:
    """A unified diff as escaped HTML, one ``<div>`` per line classed ``add``/``del``/``hunk``/
    ``head``, with the statement's quoted ``fragments`` marked on changed lines."""
    if not diff:
        return Markup("<p><i>none</i></p>")
    frags = tuple(fragments)
    lines = []
    for line in diff.splitlines():
        kind = ("head" if line.startswith(("+++", "---", "diff ", "index ")) else
                "hunk" if line.startswith("@@") else "add" if line.startswith("+") else
                "del" if line.startswith("-") else "ctx")
        body = marked(line, frags) if kind in ("add", "del") else escape(line)
        lines.append(f'<div class="{kind}">{body or "&nbsp;"}</div>')
    return Markup('<div class="diff">' + "".join(lines) + "</div>")


def quoted_fragments(item: ReviewItem) -> tuple[str, ...]:
    """What the item's statement gives away of its gold patch (the leak check's fragments)."""
    from repogym.generators.leaks import statement_leaks

    task = item.task
    return tuple(leak.fragment for leak in
                 statement_leaks(task.problem_statement, task.patch, task.test_patch))


def _templates() -> Environment:
    env = Environment(loader=DictLoader({
        "layout.html": _LAYOUT, "index.html": _INDEX, "detail.html": _DETAIL,
        "signin.html": _SIGNIN, "stats.html": _STATS}), autoescape=True)
    env.globals.update(styles=Markup(_CSS), script=Markup(_SCRIPT), task_url=task_url,
                       diff=diff_html, age=age_text)
    return env


async def _form(request: Request) -> dict[str, list[str]]:
    """The urlencoded form of a POST (every value of each field).

    Raises:
        InputError: the body is too large, of another content type, or not UTF-8.
    """
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if kind != "application/x-www-form-urlencoded":
        raise InputError(f"expected a form (application/x-www-form-urlencoded), got {kind!r}")
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise InputError(f"form of {len(body)} bytes is larger than {MAX_FORM_BYTES}")
    try:
        return parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError as exc:
        raise InputError("form is not UTF-8") from exc


def _one(form: dict[str, list[str]], key: str) -> str:
    return form.get(key, [""])[-1]


@dataclass
class _Visit:
    """One request's session: the visitor's, or a new anonymous one (``cookie`` to set)."""

    session: Session
    cookie: str
    new: bool

    @property
    def who(self) -> str:
        return self.session.reviewer


class Forbidden(InputError):
    """A POST refused before it was read: no valid CSRF token, or not signed in."""


def create_app(queue: ReviewQueue, *, host: str = "127.0.0.1",
               reviewers: Reviewers | None = None, https: bool = False) -> FastAPI:
    """The review web app over ``queue`` served on ``host`` (routes in the module docstring).

    ``https``: the cookie is marked Secure (serve behind TLS)."""
    app = FastAPI(title="repogym review", docs_url=None, redoc_url=None, openapi_url=None)
    env = _templates()
    people = reviewers or Reviewers(queue.engine, queue.url)

    def required() -> bool:
        return sign_in_required(queue.url, people.any(), host)

    def visit(request: Request) -> _Visit:
        cookie = request.cookies.get(COOKIE, "")
        session = people.session(cookie)
        if session is not None:
            return _Visit(session, cookie, new=False)
        cookie, session = people.open_session()
        return _Visit(session, cookie, new=True)

    def mode_text() -> str:
        if required():
            return "sign-in required"
        return ("open queue: no sign-in (SQLite on a loopback address, no reviewer added); "
                "reviewers name themselves")

    def respond(response: Response, v: _Visit, nonce: str = "") -> Response:
        if v.new:
            response.set_cookie(COOKIE, v.cookie, max_age=int(SESSION_HOURS * 3600),
                                httponly=True, samesite="strict", secure=https, path="/")
        if nonce:
            response.headers["Content-Security-Policy"] = (
                f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; "
                "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "same-origin"
        return response

    def page(v: _Visit, name: str, status_code: int = 200, **context: Any) -> Response:
        nonce = secrets.token_urlsafe(16)
        html = env.get_template(name).render(nonce=nonce, who=v.who, csrf=v.session.csrf,
                                             mode=mode_text(), **context)
        return respond(HTMLResponse(html, status_code=status_code), v, nonce)

    def redirect(v: _Visit, url: str) -> Response:
        return respond(RedirectResponse(url, status_code=303), v)

    def gate(v: _Visit) -> Response | None:
        """A redirect to sign in, when needed and not signed in."""
        return redirect(v, "/signin") if not v.who else None

    async def posted(request: Request, v: _Visit) -> dict[str, list[str]]:
        """The form, once its CSRF token matches the session's and someone is signed in."""
        form = await _form(request)
        if v.new or not csrf_ok(v.session, _one(form, "csrf")):
            raise Forbidden("form refused: its CSRF token is missing or wrong (reload the "
                            "page and try again)")
        return form

    @app.get("/signin", response_class=HTMLResponse)
    def signin_page(request: Request) -> Response:
        v = visit(request)
        return page(v, "signin.html", open=not required())

    @app.post("/signin")
    async def signin(request: Request) -> Response:
        v = visit(request)
        try:
            form = await posted(request, v)
            name = (check_reviewer(_one(form, "name")) if not required()
                    else await run_in_threadpool(people.who, _one(form, "token")))
        except RepogymError as exc:
            return page(v, "signin.html", _code(exc), open=not required(), error=str(exc))
        cookie, session = await run_in_threadpool(people.open_session, name, v.cookie)
        return respond(RedirectResponse("/", status_code=303), _Visit(session, cookie, True))

    @app.post("/signout")
    async def signout(request: Request) -> Response:
        v = visit(request)
        try:
            await posted(request, v)
        except RepogymError as exc:
            return page(v, "signin.html", _code(exc), open=not required(), error=str(exc))
        people.close_session(v.cookie)
        return RedirectResponse("/signin", status_code=303)

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request, status: str = "pending", repo: str = "", language: str = "",
              reason: str = "", older: str = "", newer: str = "", mine: str = "",
              msg: str = "") -> Response:
        v = visit(request)
        if (stop := gate(v)) is not None:
            return stop
        context: dict[str, Any] = dict(statuses=STATUS_FILTERS, older=older, newer=newer,
                                       mine=bool(mine), message=msg, now=queue.clock())
        try:
            f = _filter(status, repo, language, reason, older, newer, v.who if mine else "")
            items = queue.list(f.model_copy(update={"limit": PAGE_ITEMS}))
            total = queue.count(f) if len(items) == PAGE_ITEMS else len(items)
            facets = queue.facets()
        except RepogymError as exc:
            return page(v, "index.html", _code(exc), items=[], error=str(exc), total=0,
                        f=ItemFilter(), facets={"repo": [], "language": [], "reason": []},
                        **context)
        return page(v, "index.html", items=items, f=f, facets=facets, total=total, **context)

    def detail_page(v: _Visit, item: ReviewItem, status_code: int = 200,
                    **extra: Any) -> Response:
        now = queue.clock()
        holder = item.holder(now)
        pending = item.state is ReviewState.pending
        quoted = quoted_fragments(item)
        return page(
            v, "detail.html", status_code, it=item, url=task_url(item.instance_id),
            holder=holder, mine=bool(v.who) and holder == v.who, pending=pending,
            reviewed=pending and item.reviewed_by(v.who),
            show_decisions=not pending, quoted=quoted,
            statement=marked(item.task.problem_statement, quoted),
            draft=extra.pop("draft", item.task.problem_statement),
            labels=[x.value for x in DecisionLabel], severities=[x.value for x in Severity],
            next_url=_next_pending(queue, item.instance_id), **extra)

    @app.get("/tasks/{instance_id}", response_class=HTMLResponse)
    def detail(request: Request, instance_id: str, msg: str = "") -> Response:
        v = visit(request)
        if (stop := gate(v)) is not None:
            return stop
        try:
            item = queue.get(instance_id)
        except RepogymError as exc:
            return _error_page(page, v, exc)
        return detail_page(v, item, message=msg)

    async def act(request: Request, instance_id: str,
                  action: Callable[[str, dict[str, list[str]]], str]) -> Response:
        v = visit(request)
        form: dict[str, list[str]] = {}
        try:
            form = await posted(request, v)
            if not v.who:
                raise Forbidden("sign in first")
            message = await run_in_threadpool(action, v.who, form)
        except RepogymError as exc:
            current = await run_in_threadpool(_get_or_none, queue, instance_id)
            if current is None or isinstance(exc, Forbidden):
                return _error_page(page, v, exc)
            draft = _one(form, "statement") if isinstance(exc, StatementLeaks) else None
            extra = {"draft": draft, "mend_open": True} if draft is not None else {}
            return detail_page(v, current, _code(exc), error=str(exc), **extra)
        target = f"{task_url(instance_id)}?{urlencode({'msg': message})}"
        return redirect(v, target)

    @app.post("/tasks/{instance_id}/claim")
    async def claim(request: Request, instance_id: str) -> Response:
        def run(who: str, form: dict[str, list[str]]) -> str:
            item = queue.claim(instance_id, who)
            return f"claimed by {who} until {item.claimed_until:%H:%M} UTC"
        return await act(request, instance_id, run)

    @app.post("/tasks/{instance_id}/release")
    async def release(request: Request, instance_id: str) -> Response:
        def run(who: str, form: dict[str, list[str]]) -> str:
            queue.release(instance_id, who)
            return f"released by {who}"
        return await act(request, instance_id, run)

    @app.post("/tasks/{instance_id}/mend")
    async def mend(request: Request, instance_id: str) -> Response:
        def run(who: str, form: dict[str, list[str]]) -> str:
            item = queue.mend(instance_id, who, statement=_one(form, "statement"),
                              drop_tests=form.get("drop", []))
            return f"saved version {item.version} ({item.current_version.summary})" if (
                item.current_version) else f"saved version {item.version}"
        return await act(request, instance_id, run)

    def decider(verb: str, instance_id: str) -> Callable[[str, dict[str, list[str]]], str]:
        def run(who: str, form: dict[str, list[str]]) -> str:
            item = queue.decide(instance_id, who, verb, label=_one(form, "label"),
                                severity=_one(form, "severity"), note=_one(form, "note"))
            if item.state is ReviewState.pending:
                return (f"your {verb} is recorded; the task waits for another reviewer "
                        f"({len(item.counted)} of {item.reviews_needed})")
            return f"{item.state.value} by {item.reviewer}"
        return run

    @app.post("/tasks/{instance_id}/approve")
    async def approve(request: Request, instance_id: str) -> Response:
        return await act(request, instance_id, decider("approve", instance_id))

    @app.post("/tasks/{instance_id}/reject")
    async def reject(request: Request, instance_id: str) -> Response:
        return await act(request, instance_id, decider("reject", instance_id))

    @app.get("/stats", response_class=HTMLResponse)
    def stats(request: Request, days: float = 0.0) -> Response:
        v = visit(request)
        if (stop := gate(v)) is not None:
            return stop
        try:
            found = review_stats(queue.list("all"), days=days or None)
        except RepogymError as exc:
            return _error_page(page, v, exc)
        return page(v, "stats.html", stats=found, lines="\n".join(found.lines()))

    return app


def _filter(status: str, repo: str, language: str, reason: str, older: str, newer: str,
            mine: str) -> ItemFilter:
    """The list's filter from the query string.

    Raises:
        InputError: an unknown status or an age that is not a number of hours.
    """
    if status not in STATUS_FILTERS:
        raise InputError(f"unknown status {status!r}; valid: {', '.join(STATUS_FILTERS)}")
    return ItemFilter(status=status, repo=repo, language=language,
                      reason=reason, older_than=_hours(older, "older"),
                      newer_than=_hours(newer, "newer"), claimed_by=mine)


def _hours(value: str, name: str) -> timedelta | None:
    if not value.strip():
        return None
    try:
        hours = float(value)
    except ValueError:
        raise InputError(f"{name}: a number of hours, not {value!r}") from None
    if hours < 0:
        raise InputError(f"{name}: a number of hours, not {value!r}")
    return timedelta(hours=hours)


def _next_pending(queue: ReviewQueue, current: str) -> str:
    """The detail URL of the next pending task after ``current`` ("" if none)."""
    try:
        ids = queue.pending_ids()
    except RepogymError:
        return ""
    after = ids[ids.index(current) + 1:] if current in ids else ids
    return task_url(after[0]) if after else ""


def _error_page(page: Callable[..., Response], v: _Visit, exc: RepogymError) -> Response:
    return page(v, "index.html", _code(exc), items=[], error=str(exc), total=0,
                f=ItemFilter(),
                facets={"repo": [], "language": [], "reason": []}, statuses=STATUS_FILTERS,
                older="", newer="", mine=False, now=None)


def _get_or_none(queue: ReviewQueue, instance_id: str) -> ReviewItem | None:
    try:
        return queue.get(instance_id)
    except RepogymError:
        return None


def _code(exc: RepogymError) -> int:
    """HTTP status for an error: 403 refused form, 401 bad sign-in, 404 unknown task, 409
    conflict, 400 bad input, 503 infrastructure or database, 500 else."""
    if isinstance(exc, Forbidden):
        return 403
    if isinstance(exc, SignInFailed):
        return 401
    if isinstance(exc, UnknownReviewItem):
        return 404
    if isinstance(exc, ReviewConflict):
        return 409
    if isinstance(exc, InputError):
        return 400
    return 503 if isinstance(exc, (DatasetError, InfraError)) else 500
