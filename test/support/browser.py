"""A page loaded in real headless Chromium (the Debian `chromium` package), driven over the
DevTools protocol on `--remote-debugging-pipe`: no TCP port, standard library only.

The pipe's framing is Chromium's: JSON messages, each ended by a NUL byte; the browser reads
commands on its file descriptor 3 and writes replies and events on 4 (as puppeteer's
PipeTransport speaks it: puppeteer/puppeteer packages/puppeteer-core/src/node/PipeTransport.ts).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INSTALL_HINT = ("headless Chromium is needed to test the HTML report: `make test` installs it "
                "with `apt-get install -y --no-install-recommends chromium` (Debian, as root); "
                "install the chromium package or put `chromium` on PATH")


def chromium() -> str:
    """The browser's path; raises (never skips) when it is missing, saying how to get it."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(f"chromium not found on PATH. {INSTALL_HINT}")


@dataclass
class PageLoad:
    console: list[dict[str, Any]] = field(default_factory=list)  # consoleAPICalled
    exceptions: list[dict[str, Any]] = field(default_factory=list)  # exceptionThrown
    log: list[dict[str, Any]] = field(default_factory=list)  # Log.entryAdded
    screenshot: bytes = b""  # PNG
    evaluated: Any = None  # the value of the expression asked for after the load

    @property
    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (a failed fetch, a
        refused resource), each as one line."""
        out = [f"console.{c['type']}: {c.get('args')}" for c in self.console
               if c["type"] in ("error", "assert")]
        for e in self.exceptions:
            d = e.get("exceptionDetails", {})
            out.append(f"exception: {d.get('text')} "
                       f"{d.get('exception', {}).get('description', '')}".strip())
        out += [f"log {e['entry']['source']}: {e['entry']['text']} {e['entry'].get('url', '')}"
                .strip() for e in self.log if e["entry"]["level"] == "error"]
        return out


class _Pipe:
    def __init__(self, binary: str, profile: str, width: int, height: int) -> None:
        to_browser_r, self._w = os.pipe()
        self._r, from_browser_w = os.pipe()
        args = [binary, "--headless=new", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", f"--user-data-dir={profile}",
                f"--window-size={width},{height}", "--no-first-run",
                "--disable-background-networking", "--disable-extensions", "about:blank"]

        def fds() -> None:  # the browser's fds 3 and 4 are the protocol pipe
            a, b = os.dup(to_browser_r), os.dup(from_browser_w)  # neither clobbers the other
            os.dup2(a, 3)
            os.dup2(b, 4)

        # preexec runs before the child closes its other descriptors; 3 and 4 are kept
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=fds,
                                     pass_fds=(3, 4))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for e in self.events:
            if e.get("method") == method:
                return e
        deadline = time.monotonic() + timeout
        while True:
            e = self._next(deadline)
            self.events.append(e)
            if e.get("method") == method:
                return e

    def _next(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("headless Chromium did not answer in time")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError("headless Chromium closed its DevTools pipe "
                                       f"(exit code {self.proc.poll()})")
                self._buf += chunk
        text, _, self._buf = self._buf.partition(b"\0")
        return json.loads(text)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._w, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)


def load_page(path: Path, *, width: int = 1200, height: int = 900,
              evaluate: str | None = None, settle_s: float = 0.3) -> PageLoad:
    """Open `path` as a file:// page, wait for its load event, collect what the page said,
    evaluate `evaluate` (a JS expression, by value) and take a full-page screenshot."""
    binary = chromium()
    with tempfile.TemporaryDirectory(prefix="mango-chromium-") as profile:
        pipe = _Pipe(binary, profile, width, height)
        try:
            target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = pipe.send("Target.attachToTarget", {"targetId": target,
                                                          "flatten": True})["sessionId"]
            for domain in ("Runtime", "Log", "Page"):
                pipe.send(f"{domain}.enable", session=session)
            pipe.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
            pipe.wait_event("Page.loadEventFired")
            time.sleep(settle_s)  # late console messages arrive after the load event
            out = PageLoad()
            if evaluate is not None:
                res = pipe.send("Runtime.evaluate", {"expression": evaluate,
                                                     "returnByValue": True}, session=session)
                out.evaluated = res.get("result", {}).get("value")
            shot = pipe.send("Page.captureScreenshot", {"format": "png",
                                                        "captureBeyondViewport": True},
                             session=session)
            out.screenshot = base64.b64decode(shot["data"])
            for e in pipe.events:
                params = e.get("params", {})
                if e.get("method") == "Runtime.consoleAPICalled":
                    out.console.append(params)
                elif e.get("method") == "Runtime.exceptionThrown":
                    out.exceptions.append(params)
                elif e.get("method") == "Log.entryAdded":
                    out.log.append(params)
            return out
        finally:
            pipe.close()
