"""Is a request meant for this service, and is a write meant by its sender? (issue 36)

A service with no API token (the default) must not take writes a browser was tricked into
sending: a page on another site can submit a plain HTML form or a no-CORS ``fetch`` to
``http://127.0.0.1:8000`` (a cross-site request), or make its own name resolve to 127.0.0.1 and
call the service as itself (DNS rebinding, which the ``Host`` check stops). A browser always
says where a write comes from (``Origin`` on every POST; ``Sec-Fetch-Site`` in current
browsers), and it cannot send ``Content-Type: application/json`` to another origin without a
CORS preflight, which this service never grants. Command-line clients send neither header.
"""

from __future__ import annotations

from urllib.parse import urlsplit

SAME_ORIGIN_FETCH = frozenset({"same-origin", "none"})  # "none": the user's own navigation


def host_name(host: str) -> str:
    """The name in a ``Host`` header or an origin's netloc, without its port: ``[::1]:8000`` → ``[::1]``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    """``allowed`` holds names, ``*.domain`` for the domain's names, or ``*`` for any."""
    name = host_name(host)
    return any(
        pattern == "*" or name == pattern
        or (pattern.startswith("*.") and name.endswith(pattern[1:]) and len(name) > len(pattern) - 1)
        for pattern in allowed
    )


def cross_site_reason(origin: str | None, fetch_site: str | None, host: str) -> str | None:
    """Why a write comes from another site, or None: ``Origin`` must be this service's own
    scheme-less host and port (``null``, from a sandboxed page or a file, is another site), and
    ``Sec-Fetch-Site`` must be same-origin."""
    if fetch_site is not None and fetch_site.lower() not in SAME_ORIGIN_FETCH:
        return f"Sec-Fetch-Site is {fetch_site!r}: a page on another site sent this write"
    if origin is not None:
        netloc = urlsplit(origin).netloc.lower() if origin != "null" else ""
        if netloc != host.strip().lower():
            return f"Origin {origin!r} is not this service ({host!r}): a page on another site sent this write"
    return None


def declares_json(content_type: str | None, has_body: bool) -> bool:
    """A write's body is JSON: ``application/json`` (parameters such as charset allowed); a write
    with no body may declare nothing, but a declared form or text type is refused all the same."""
    if content_type is None:
        return not has_body
    return content_type.split(";", 1)[0].strip().lower() == "application/json"
