"""The review queue as a web page: a FastAPI app rendering HTML on the server, no JavaScript.

Routes (``create_app(queue)``):

=====================================  ==================================================
``GET /?status=all``                   the queue, pending first: id, state, reason, repo, age
``GET /tasks/{id}``                    one task: statement, diffs, F2P/P2P, evidence, form
``POST /tasks/{id}/approve``           form fields ``reviewer`` and ``note``; redirects
``POST /tasks/{id}/reject``            (303) to the task with a message, or shows the error
=====================================  ==================================================

Everything from the dataset is untrusted text (a statement, a patch or evidence may hold
HTML): templates autoescape, and the diffs are coloured by Pygments, which escapes too.
A decision that lost a race is shown as the :class:`ReviewConflict` message (409). Forms are
parsed from ``application/x-www-form-urlencoded`` bodies with the standard library, so no
multipart package is needed. The page has no login: serve it on 127.0.0.1 or behind a proxy
that authenticates.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, quote, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import DictLoader, Environment
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer
from starlette.concurrency import run_in_threadpool

from repogym.datasets.review import (
    STATUS_FILTERS,
    ReviewConflict,
    ReviewItem,
    ReviewQueue,
    UnknownReviewItem,
    age_text,
)
from repogym.errors import DatasetError, InputError, RepogymError

MAX_FORM_BYTES = 64 * 1024
_FORMATTER = HtmlFormatter(cssclass="diff", wrapcode=True)

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; padding: 0 1rem; max-width: 72rem;
       color: #222; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #ddd;
         vertical-align: top; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; }
.statement { background: #f6f6f6; padding: .8rem; border-radius: 4px; }
.diff pre { background: #fafafa; padding: .6rem; border: 1px solid #eee; overflow-x: auto; }
.state-pending { color: #a60; } .state-approved { color: #070; } .state-rejected { color: #a00; }
.message { background: #e8f6e8; border: 1px solid #7b7; padding: .6rem; }
.error { background: #fbe9e9; border: 1px solid #d77; padding: .6rem; }
form label { display: block; margin: .5rem 0; }
textarea { width: 100%; height: 5rem; }
"""

_LAYOUT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{% block title %}{% endblock %}</title>
<style>{{ styles }}</style></head>
<body><p><a href="/">review queue</a></p>
{% if message %}<p class="message" id="message">{{ message }}</p>{% endif %}
{% if error %}<p class="error" id="error">error: {{ error }}</p>{% endif %}
{% block body %}{% endblock %}</body></html>
"""

_INDEX = """{% extends "layout.html" %}{% block title %}review queue{% endblock %}
{% block body %}<h1>Review queue</h1>
<p>{% for s in filters %}<a href="/?status={{ s }}">{{ s }}</a>{{ " · " if not loop.last }}
{% endfor %} — showing <b>{{ status }}</b>, {{ items|length }} item(s)</p>
<table id="queue"><thead><tr><th>task</th><th>state</th><th>reason</th><th>repo</th>
<th>age</th><th>decided by</th></tr></thead><tbody>
{% for it in items %}<tr class="item" data-id="{{ it.instance_id }}">
<td><a href="{{ task_url(it.instance_id) }}">{{ it.instance_id }}</a></td>
<td class="state-{{ it.state.value }}">{{ it.state.value }}</td><td>{{ it.reason }}</td>
<td>{{ it.repo }}</td><td>{{ age(it.flagged_at) }}</td><td>{{ it.reviewer }}</td></tr>
{% else %}<tr><td colspan="6">nothing here</td></tr>{% endfor %}
</tbody></table>{% endblock %}
"""

_DETAIL = """{% extends "layout.html" %}{% block title %}{{ it.instance_id }}{% endblock %}
{% block body %}<h1>{{ it.instance_id }}</h1>
<table><tr><th>state</th><td class="state-{{ it.state.value }}" id="state">{{ it.state.value }}
{% if it.reviewer %} by {{ it.reviewer }}{% endif %}</td></tr>
{% if it.note %}<tr><th>note</th><td><pre id="note">{{ it.note }}</pre></td></tr>{% endif %}
<tr><th>reason</th><td id="reason">{{ it.reason }}</td></tr>
<tr><th>detail</th><td><pre>{{ it.task.detail }}</pre></td></tr>
<tr><th>repo</th><td>{{ it.repo }} @ {{ it.task.base_commit }}</td></tr>
<tr><th>kind</th><td>{{ it.task.kind.value }} ({{ it.task.generator }}
{%- if it.task.mutator %}, {{ it.task.mutator }}{% endif %})</td></tr>
<tr><th>flagged</th><td>{{ age(it.flagged_at) }} ago</td></tr></table>
{% if it.state.value == "pending" %}
<form method="post" id="decide"><label>reviewer <input name="reviewer" required
 maxlength="255"></label><label>note<textarea name="note"></textarea></label>
<button type="submit" formaction="{{ task_url(it.instance_id) }}/approve" id="approve">Approve
</button> <button type="submit" formaction="{{ task_url(it.instance_id) }}/reject" id="reject">
Reject</button></form>{% endif %}
<h2>Statement</h2><pre class="statement" id="statement">{{ it.task.problem_statement }}</pre>
<h2>Bug patch (base → broken)</h2>{{ diff(it.task.bug_patch) }}
<h2>Gold patch (broken → fixed)</h2>{{ diff(it.task.patch) }}
{% if it.task.test_patch %}<h2>Test patch</h2>{{ diff(it.task.test_patch) }}{% endif %}
<h2>FAIL_TO_PASS</h2><ul id="f2p">{% for t in it.task.FAIL_TO_PASS %}<li><code>{{ t }}</code>
</li>{% else %}<li>none</li>{% endfor %}</ul>
<h2>PASS_TO_PASS</h2><ul id="p2p">{% for t in it.task.PASS_TO_PASS %}<li><code>{{ t }}</code>
</li>{% else %}<li>none</li>{% endfor %}</ul>
<h2>Evidence</h2><table id="evidence">{% for k, v in it.task.evidence|dictsort %}
<tr><th>{{ k }}</th><td><pre>{{ v }}</pre></td></tr>{% else %}<tr><td>none</td></tr>
{% endfor %}</table>{% endblock %}
"""


def task_url(instance_id: str) -> str:
    """The detail page's path for an id (percent-encoded: ids are data)."""
    return "/tasks/" + quote(instance_id, safe="")


def diff_html(text: str) -> Markup:
    """A unified diff as escaped, coloured HTML (Pygments classes ``gi``/``gd``/``gu``...)."""
    if not text:
        return Markup("<p><i>none</i></p>")
    return Markup(highlight(text, DiffLexer(), _FORMATTER))


def _templates() -> Environment:
    env = Environment(loader=DictLoader({"layout.html": _LAYOUT, "index.html": _INDEX,
                                         "detail.html": _DETAIL}), autoescape=True)
    styles = Markup(_CSS + _FORMATTER.get_style_defs(".diff"))  # ours, not data
    env.globals.update(styles=styles, task_url=task_url, diff=diff_html, age=age_text)
    return env


async def _form(request: Request) -> dict[str, str]:
    """The urlencoded form of a POST, one value per field.

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
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError as exc:
        raise InputError("form is not UTF-8") from exc
    return {key: values[-1] for key, values in fields.items()}


def create_app(queue: ReviewQueue) -> FastAPI:
    """The review web app over ``queue`` (routes in the module docstring)."""
    app = FastAPI(title="repogym review", docs_url=None, redoc_url=None, openapi_url=None)
    env = _templates()

    def page(name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**context), status_code=status_code)

    @app.get("/", response_class=HTMLResponse)
    def index(status: str = "all", msg: str = "") -> HTMLResponse:
        try:
            items = queue.list(status)
        except RepogymError as exc:
            return page("index.html", _code(exc), items=[], status=status,
                        filters=STATUS_FILTERS, error=str(exc), message=msg)
        return page("index.html", items=items, status=status, filters=STATUS_FILTERS,
                    message=msg)

    @app.get("/tasks/{instance_id}", response_class=HTMLResponse)
    def detail(instance_id: str, msg: str = "") -> HTMLResponse:
        try:
            item = queue.get(instance_id)
        except RepogymError as exc:
            return page("index.html", _code(exc), items=[], status="", filters=STATUS_FILTERS,
                        error=str(exc))
        return page("detail.html", it=item, message=msg)

    async def decide(request: Request, instance_id: str, action: str) -> Response:
        try:
            form = await _form(request)
            item = await run_in_threadpool(_act, queue, action, instance_id, form)
        except RepogymError as exc:
            current = await run_in_threadpool(_get_or_none, queue, instance_id)
            if current is None:
                return page("index.html", _code(exc), items=[], status="",
                            filters=STATUS_FILTERS, error=str(exc))
            return page("detail.html", _code(exc), it=current, error=str(exc))
        message = f"{item.state.value} by {item.reviewer}"
        return RedirectResponse(f"{task_url(instance_id)}?{urlencode({'msg': message})}",
                                status_code=303)

    @app.post("/tasks/{instance_id}/approve")
    async def approve(request: Request, instance_id: str) -> Response:
        return await decide(request, instance_id, "approve")

    @app.post("/tasks/{instance_id}/reject")
    async def reject(request: Request, instance_id: str) -> Response:
        return await decide(request, instance_id, "reject")

    return app


def _act(queue: ReviewQueue, action: str, instance_id: str, form: dict[str, str]) -> ReviewItem:
    reviewer, note = form.get("reviewer", ""), form.get("note", "")
    if action == "approve":
        return queue.approve(instance_id, reviewer, note)
    return queue.reject(instance_id, reviewer, note)


def _get_or_none(queue: ReviewQueue, instance_id: str) -> ReviewItem | None:
    try:
        return queue.get(instance_id)
    except RepogymError:
        return None


def _code(exc: RepogymError) -> int:
    """HTTP status for an error: 404 unknown task, 409 lost race, 400 bad input, 500 else."""
    if isinstance(exc, UnknownReviewItem):
        return 404
    if isinstance(exc, ReviewConflict):
        return 409
    if isinstance(exc, InputError):
        return 400
    return 503 if isinstance(exc, DatasetError) else 500
