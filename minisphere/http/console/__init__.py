"""The web console: plain HTML, CSS and JavaScript (package data under `static/`), served by
the same app at `/ui`. No build step, no CDN, nothing fetched at run time.

The console is a client of the public JSON routes only: the browser keeps the pasted token in
`sessionStorage` and sends it as `Authorization: Bearer …` (no cookies, so nothing for a
cross-site request to ride on); it can do nothing the token cannot. Its own responses carry a
strict Content-Security-Policy (scripts and styles from this origin only, no inline script, no
framing, API calls to this origin only), so memory content the page shows — untrusted text,
always inserted as text nodes — cannot run as code even if a bug slipped it in as markup.

`mount_console(api)` adds `GET /ui` (a redirect to `/ui/`), `GET /ui/` (the page) and
`GET /ui/{asset}` for the files found under `static/` when the app is built: a fixed table,
so no request path ever reaches the file system.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

CONSOLE_PREFIX = "/ui"
STATIC_PACKAGE = "static"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-cache",
}


def load_assets() -> dict[str, tuple[bytes, str]]:
    """Every shipped file under `static/`, by its path relative to it: (bytes, content type)."""
    assets: dict[str, tuple[bytes, str]] = {}

    def walk(folder: Traversable, prefix: str) -> None:
        for item in folder.iterdir():
            name = prefix + item.name
            if item.is_dir():
                walk(item, name + "/")
                continue
            suffix = "." + item.name.rsplit(".", 1)[-1] if "." in item.name else ""
            if suffix in CONTENT_TYPES:
                assets[name] = (item.read_bytes(), CONTENT_TYPES[suffix])

    walk(resources.files(__package__).joinpath(STATIC_PACKAGE), "")
    return assets


def _not_found() -> JSONResponse:
    return JSONResponse(
        {"error": {"code": "not_found", "message": "no such console file"}},
        status_code=404,
        headers=SECURITY_HEADERS,
    )


def mount_console(api: FastAPI, prefix: str = CONSOLE_PREFIX) -> None:
    """Serve the console at `prefix` on `api` (left out of the OpenAPI document)."""
    assets = load_assets()

    def send(name: str) -> Response:
        found = assets.get(name)
        if found is None:
            return _not_found()
        body, media_type = found
        return Response(body, media_type=media_type, headers=SECURITY_HEADERS)

    async def redirect(request: Request) -> RedirectResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        return RedirectResponse(f"{root}{prefix}/", status_code=308, headers=SECURITY_HEADERS)

    async def page() -> Response:
        return send("index.html")

    async def asset(name: str) -> Response:
        return send(name)

    for path, endpoint in (
        (prefix, redirect),
        (prefix + "/", page),
        (prefix + "/{name:path}", asset),
    ):
        api.add_api_route(
            path, endpoint, methods=["GET", "HEAD"], include_in_schema=False, name="console"
        )
