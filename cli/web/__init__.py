"""`memdir ui`: the user's web page over the library, and the JSON API under it (docs/HTTP.md).

`views.py` gathers what each view shows from the use cases, through the policy rows
`ui review`, `ui recall`, `ui memory`, `ui timeline`, `ui links` and `ui health`
(archive_format/visibility.py); `server.py` is the HTTP adapter (token, cookie, CSRF and
Origin checks, rate limits, request ids, metrics); `static/` holds the page: plain HTML, CSS
and JavaScript, nothing fetched from the network. Starlette and uvicorn load only here.
"""
