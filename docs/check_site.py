"""Check the built documentation site in a real browser: every page renders, the math is typeset, search works.

    mkdocs build                          # the site, into build/site (needs the docs extra)
    python docs/check_site.py             # serves build/site on 127.0.0.1 and drives a headless Chromium

The browser is Debian's Chromium (`apt-get install chromium`; override with --chromium PATH or $CHROMIUM),
driven through the Chrome DevTools protocol over a pipe (--remote-debugging-pipe: no websocket, no extra package,
standard library only). Checks:

* every page (every index.html of the site) loads and shows its article with a title;
* on every page with math, MathJax has typeset every formula (no raw TeX left in the arithmatex spans) without an
  error (no formula MathJax could not parse, no undefined command);
* every page written for the site (all but the API reference and the benchmark report, which show the library's
  own plain-text notation) shows in its rendered text outside code no raw TeX (a "$", "\(", a TeX command such
  as "\frac", a "_{" or "^{"), no plain-text math (a subscript written "R_i") and no emphasis that Markdown made of
  the underscores or asterisks of such math ("R_i*) with R_i*" in italics);
* every notebook page shows the outputs of its code cells (an output box under a code cell), and every figure on
  it is a loaded image;
* the search box returns results for a few queries (typed as keystrokes into Material's search field).

Exit 0 when every check passes, 1 otherwise; one line per check. --screenshot DIR saves a PNG of a few pages.
"""
from __future__ import annotations

import argparse
import base64
import functools
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe", "--window-size=1280,900"]
NOTEBOOK_PAGES = ("notebooks/exercises/", "notebooks/solutions/")
SEARCHES = {"mirror snapshot": "gdro", "equalized odds": "assessment", "Lemma C.1": "glossary"}
SCREENSHOTS = ["", "glossary/", "notebooks/solutions/s1_group_dro/"]


class Browser:
    """A headless Chromium driven through the DevTools protocol on file descriptors 3 (in) and 4 (out)."""

    def __init__(self, chromium: str, profile: str):
        to_browser_r, self._out = os.pipe()
        self._in, from_browser_w = os.pipe()
        # the browser reads commands on fd 3 and writes replies on fd 4
        self.proc = subprocess.Popen([chromium, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=(3, 4), preexec_fn=lambda: _dup_pipes(to_browser_r, from_browser_w),
                                     start_new_session=True)   # its own process group: close() ends all of it
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer, self._next, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def call(self, method: str, session: bool = False, timeout: float = 30.0, **params) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)
        raise TimeoutError(f"{method}: no reply in {timeout} s")

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("the browser stopped answering")
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed the pipe (did it start? try --chromium)")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}...: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0):
        """Poll a JavaScript expression until it is truthy; return its last value."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        return value

    def goto(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("document.readyState === 'complete'")

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)   # whatever is left of the browser's processes
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        os.close(self._in)
        os.close(self._out)


def _dup_pipes(read_end: int, write_end: int) -> None:
    """In the child: the command pipe on fd 3, the reply pipe on fd 4."""
    os.dup2(read_end, 3)
    os.dup2(write_end, 4)


def serve(site: Path):
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def pages_of(site: Path) -> list[str]:
    """The site's pages, relative to its root: every folder with an index.html (MkDocs writes page/index.html)."""
    folders = [p.parent.relative_to(site) for p in site.rglob("index.html")]
    return sorted("" if f == Path(".") else f.as_posix() + "/" for f in folders
                  if not f.parts or f.parts[0] not in ("assets", "search"))


TITLE = """(() => {
  const h1 = document.querySelector('article h1');
  if (!h1) return null;
  return [...h1.childNodes].filter(n => !(n.classList && n.classList.contains('headerlink')))
    .map(n => n.textContent).join('').trim();
})()"""
# The rendered text of the article outside code and typeset math: what a reader sees as prose.
PROSE = """(() => {
  const article = document.querySelector('article');
  if (!article) return '';
  const skip = 'pre, code, mjx-container, script, style, .arithmatex, .headerlink';
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT,
    {acceptNode: n => n.parentElement.closest(skip) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  const parts = [];
  while (walker.nextNode()) parts.push(walker.currentNode.textContent);
  return parts.join('');
})()"""
# Emphasis made of math: the text between two underscores or asterisks of formulas ("R_i*) with R_i*"), i.e. an
# emphasis whose own text (without its code and typeset math) starts with a closing bracket or has a "_" or "^".
STRAY_EMPHASIS = """[...document.querySelectorAll('article em, article strong')]
  .filter(e => !e.closest('pre, code, .arithmatex'))
  .map(e => { const c = e.cloneNode(true);
              c.querySelectorAll('code, .arithmatex, mjx-container').forEach(n => n.remove());
              return c.textContent; })
  .filter(t => /^[)\\],;]|[_^]/.test(t))"""
# Formulas MathJax typeset with an error: a parse error (merror) or an undefined command (shown in red).
MATH_ERRORS = """(() => {
  const bad = [];
  for (const item of MathJax.startup.document.math) {
    item.root.walkTree(node => {
      if (node.isKind('merror') || (node.isKind('mtext') && node.attributes.get('mathcolor') === 'red'))
        bad.push(item.math.slice(0, 60));
    });
  }
  return bad;
})()"""
NOTEBOOK_STATE = """(() => ({
  outputs: document.querySelectorAll('article .admonition.output').length,
  code: document.querySelectorAll('article .highlight').length,
  figures: [...document.querySelectorAll('article .admonition.output img')].map(i => i.complete && i.naturalWidth > 0),
}))()"""
# Raw TeX in the prose of a page (after MathJax ran): a "$", a math delimiter "\(" or "\[", a command, a braced
# sub- or superscript.
RAW_TEX = re.compile(r"\$|\\[A-Za-z()\[\]]|[_^]\{")
# Math typed as plain text: a one-letter symbol with a sub- or superscript ("R_i", "σ^2", "n_gc"); and Markdown
# left as text: a list item's "* " run into the paragraph before it.
PLAIN_MATH = re.compile(r"\b[A-Za-zα-ωΑ-Ω][_^][A-Za-z0-9]{1,2}\b|(?:^|\s)\*\s")
# Pages whose text is the library's own plain-text notation ("max_{y in Y}", "R_g"), not Markdown written for the
# site: the API reference (rendered from the docstrings) and the benchmark report (sections written by the
# benchmark scripts). Their typeset math is checked; their prose and emphasis are not (the docstrings' "x*" still
# turn into emphasis on the API page: fixed in the docstrings, not here).
LIBRARY_TEXT_PAGES = ("api/", "benchmarks/")


def raw_math(prose: str) -> list[str]:
    """The raw TeX and plain-text math in a page's prose, with a little context (at most three)."""
    hits = [m for pattern in (RAW_TEX, PLAIN_MATH) for m in pattern.finditer(prose)]
    return [prose[max(0, m.start() - 20): m.end() + 20] for m in hits][:3]


MATH_STATE = """(() => {
  const spans = [...document.querySelectorAll('.arithmatex')];
  const raw = spans.filter(s => !s.querySelector('mjx-container')).map(s => s.textContent.slice(0, 60));
  return {spans: spans.length, typeset: document.querySelectorAll('mjx-container').length, raw: raw,
          mathjax: !!(window.MathJax && window.MathJax.startup && window.MathJax.startup.promise)};
})()"""


def check(site: Path, chromium: str, screenshots: Path | None) -> list[tuple[bool, str]]:
    results = []
    server, base = serve(site)
    profile = tempfile.mkdtemp(prefix="fairmodel-site-check-")
    browser = Browser(chromium, profile)
    try:
        pages = pages_of(site)
        results.append((len(pages) > 10, f"the site has {len(pages)} pages"))
        math_pages = 0
        for page in pages:
            browser.goto(base + page)
            title = browser.wait_for(TITLE)
            ok = bool(title)
            detail = f"page /{page}: title {title!r}" if ok else f"page /{page}: no article title"
            state = browser.evaluate(MATH_STATE)
            if state["spans"]:
                math_pages += 1
                if browser.wait_for("!!(window.MathJax && MathJax.startup)", timeout=5):   # the script loaded
                    browser.wait_for("MathJax.startup.promise.then(() => true)")
                state = browser.evaluate(MATH_STATE)
                errors = browser.evaluate(MATH_ERRORS) if state["mathjax"] else []
                ok = ok and state["mathjax"] and not state["raw"] and not errors and state["typeset"] >= state["spans"]
                detail += f"; math {state['typeset']}/{state['spans']} typeset"
                if state["raw"]:
                    detail += f", raw TeX left: {state['raw'][:3]}"
                if errors:
                    detail += f", MathJax errors in: {errors[:3]}"
            written = page not in LIBRARY_TEXT_PAGES
            raw = raw_math(browser.evaluate(PROSE)) if written else []
            stray = browser.evaluate(STRAY_EMPHASIS) if written else []
            if raw or stray:
                ok = False
                detail += f"; raw math in the text: {raw}" if raw else f"; emphasis made of math: {stray[:3]}"
            if page.startswith(NOTEBOOK_PAGES):
                notebook = browser.evaluate(NOTEBOOK_STATE)
                ok = ok and notebook["outputs"] > 0 and all(notebook["figures"])
                detail += (f"; {notebook['outputs']} outputs under {notebook['code']} code cells, "
                           f"{sum(notebook['figures'])}/{len(notebook['figures'])} figures loaded")
            results.append((ok, detail))
        results.append((math_pages >= 3, f"{math_pages} pages have math"))
        for query, expected in SEARCHES.items():
            browser.goto(base)
            browser.evaluate("document.querySelector('.md-search__input').focus()")
            browser.call("Input.insertText", session=True, text=query)
            found = browser.wait_for("""(() => {
              const items = [...document.querySelectorAll('.md-search-result__item a')].map(a => a.href);
              return items.length ? items : null; })()""")
            hit = bool(found) and any(f"/{expected}/" in href for href in found)
            results.append((hit, f"search {query!r}: {len(found or [])} results"
                                 + (f", {expected} among them" if hit else f", expected a result on /{expected}/")))
        if screenshots is not None:
            screenshots.mkdir(parents=True, exist_ok=True)
            for page in SCREENSHOTS:
                browser.goto(base + page)
                browser.wait_for("!(window.MathJax && MathJax.startup) || MathJax.startup.promise.then(() => true)")
                png = browser.call("Page.captureScreenshot", session=True, format="png")["data"]
                target = screenshots / ((page.strip("/").replace("/", "_") or "index") + ".png")
                target.write_bytes(base64.b64decode(png))
                results.append((True, f"screenshot {target}"))
    finally:
        browser.close()
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Check the built documentation site in headless Chromium.")
    parser.add_argument("--site", default=str(ROOT / "build" / "site"), help="the built site (default build/site)")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM") or shutil.which("chromium")
                        or "/usr/bin/chromium", help="the Chromium binary (default: chromium on PATH)")
    parser.add_argument("--screenshot", metavar="DIR", help="save PNG screenshots of a few pages into DIR")
    args = parser.parse_args(argv)
    site = Path(args.site)
    if not (site / "index.html").exists():
        print(f"check_site: no built site in {site}; run `mkdocs build` first", file=sys.stderr)
        return 2
    if not Path(args.chromium).exists():
        print(f"check_site: no Chromium at {args.chromium}; `apt-get install chromium` or pass --chromium",
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # so that the browser is closed on a kill
    start = time.perf_counter()
    results = check(site, args.chromium, Path(args.screenshot) if args.screenshot else None)
    for ok, detail in results:
        print(("ok    " if ok else "FAIL  ") + detail)
    failed = sum(not ok for ok, _ in results)
    print(f"{len(results) - failed} passed, {failed} failed ({time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
