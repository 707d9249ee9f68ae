"""A minimal Chrome DevTools Protocol client over --remote-debugging-pipe (no websocket, no
package): chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events
on fd 4. One browser per page load, so no connection, cache or session ticket is reused."""
import json
import os
import select
import subprocess
import time


class CdpError(RuntimeError):
    pass


class Browser:
    """chromium-headless-shell started with `argv_prefix` (e.g. ["ip", "netns", "exec", ns])
    and `flags`, talking DevTools over a pipe."""

    def __init__(self, argv_prefix, binary, home, flags=(), log_path=os.devnull):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # The child sees them as fds 3 and 4 (copied high first: either may already be 3 or 4;
        # subprocess closes every fd not in pass_fds after preexec_fn).
        def remap():
            r, w = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(r, 3)
            os.dup2(w, 4)
        log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [*argv_prefix, "env", f"HOME={home}", binary, "--remote-debugging-pipe",
             "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-breakpad",
             f"--user-data-dir={os.path.join(home, 'profile')}", *flags, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=remap, pass_fds=(3, 4), start_new_session=True)
        log.close()
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next_id = 0
        self.events = []

    def send(self, method, params=None, session=None, timeout=30):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self._next_id:
                if "error" in m:
                    raise CdpError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout, session=None):
        """The first event `method` (already received or arriving before `timeout` s)."""
        deadline = time.monotonic() + timeout
        i = 0
        while True:
            while i < len(self.events):
                e = self.events[i]
                i += 1
                if e.get("method") == method and (session is None or e.get("sessionId") == session):
                    return e
            self.events.append(self._read(deadline))

    def _read(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("timed out waiting for the browser")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 16)
                if not chunk:
                    raise CdpError(f"browser closed the pipe (exit {self.proc.poll()})")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def page_session(self):
        """Attaches to the first page target (about:blank) in flat mode."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pages = [t for t in self.send("Target.getTargets")["targetInfos"] if t["type"] == "page"]
            if pages:
                return self.send("Target.attachToTarget",
                                 {"targetId": pages[0]["targetId"], "flatten": True})["sessionId"]
            time.sleep(0.05)
        raise CdpError("no page target")

    def close(self):
        try:
            os.write(self._to_child, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
        except OSError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(5)
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass


# Navigation Timing level 2 (high resolution, relative to the navigation's start, i.e. the
# paper's navigationStart = 0) plus the protocol of the document (nextHopProtocol: "h3").
# timeOrigin (Unix ms) places it on the clock of the packet captures.
TIMING_JS = ("JSON.stringify(Object.assign(performance.getEntriesByType('navigation')[0].toJSON(),"
             " {timeOrigin: performance.timeOrigin}))")


def load_page(browser, url, timeout):
    """Navigates to `url`, waits for the load event, returns (timing dict, responses) where
    responses = [{url, protocol, status, encodedDataLength}] of every response."""
    s = browser.page_session()
    browser.send("Network.enable", session=s)
    browser.send("Page.enable", session=s)
    nav = browser.send("Page.navigate", {"url": url}, session=s, timeout=timeout)
    if nav.get("errorText"):
        raise CdpError(f"navigate {url}: {nav['errorText']}")
    browser.wait_event("Page.loadEventFired", timeout, session=s)
    res = browser.send("Runtime.evaluate", {"expression": TIMING_JS, "returnByValue": True},
                       session=s)
    timing = json.loads(res["result"]["value"])
    responses = {}
    for e in browser.events:
        if e.get("sessionId") != s:
            continue
        p = e.get("params", {})
        if e.get("method") == "Network.responseReceived":
            r = p["response"]
            responses[p["requestId"]] = {"url": r["url"], "protocol": r.get("protocol", ""),
                                         "status": r.get("status", 0), "bytes": 0}
        elif e.get("method") == "Network.loadingFinished" and p["requestId"] in responses:
            responses[p["requestId"]]["bytes"] = int(p.get("encodedDataLength", 0))
    return timing, list(responses.values())
