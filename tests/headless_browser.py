"""A headless Chromium driven over its DevTools protocol on a pipe (no tests here).

Enough of the protocol to open a page at a given window size, read values out of it,
press real keys (Tab moves the focus as it does for a person, which script-made events
cannot) and take a screenshot. `--remote-debugging-pipe` reads commands on fd 3 and writes
answers on fd 4, each a JSON text ended by a NUL byte: no port, no extra package.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-extensions", "--hide-scrollbars", "--remote-debugging-pipe",
)
KEYS = {  # key -> (code, windows virtual key code)
    "Tab": ("Tab", 9), "Enter": ("Enter", 13), "Home": ("Home", 36), "End": ("End", 35),
    "ArrowUp": ("ArrowUp", 38), "ArrowDown": ("ArrowDown", 40), "ArrowLeft": ("ArrowLeft", 37),
    "ArrowRight": ("ArrowRight", 39), "l": ("KeyL", 76),
}


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    """One Chromium process with one page; use as a context manager."""

    def __init__(self, executable: str, width: int = 1400, height: int = 900, timeout: float = 60.0):
        self.timeout = timeout
        self.width, self.height = width, height
        self._profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_fds():  # in the child: commands on fd 3, answers on fd 4 (moved up first: no clobbering)
            high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self._proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self._profile}", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire_fds, close_fds=False,  # only the inheritable fds 3 and 4 go along (PEP 446)
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list = []
        self.session = None
        try:
            pages = [t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page"]
            target = pages[0]["targetId"] if pages else self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
            self.call("Page.enable")
        except Exception:
            self.close()
            raise

    # ---- the protocol ----

    def call(self, method: str, **params):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._events.append(reply)

    def _read(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("no answer from Chromium")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise BrowserError(f"Chromium closed the pipe (exit status {self._proc.poll()})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def wait_for(self, event: str) -> dict:
        for i, e in enumerate(self._events):
            if e.get("method") == event:
                return self._events.pop(i)
        while True:
            e = self._read()
            if e.get("method") == event:
                return e
            self._events.append(e)

    # ---- what a test does ----

    def open(self, url: str) -> None:
        self._events.clear()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def js(self, expression: str):
        """The value of a JavaScript expression in the page (JSON values only)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r}: {result['exceptionDetails'].get('text')} "
                               f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result["result"].get("value")

    def press(self, key: str, shift: bool = False) -> None:
        """A real key press, as the keyboard sends it (focus moves, default actions run)."""
        code, vk = KEYS[key]
        common = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": 8 if shift else 0}
        text = {"text": key} if len(key) == 1 else {}
        self.call("Input.dispatchKeyEvent", type="keyDown", **common, **text)
        self.call("Input.dispatchKeyEvent", type="keyUp", **common)

    def screenshot(self, path: str, full_page: bool = False) -> None:
        params = {"format": "png"}
        if full_page:
            size = self.js("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))

    def close(self) -> None:
        try:
            if self._proc.poll() is None:
                try:
                    self.session = None
                    os.write(self._to_browser, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
                    self._proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    self._proc.kill()
                    self._proc.wait()
        finally:
            for fd in (self._to_browser, self._from_browser):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
