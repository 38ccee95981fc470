#!/usr/bin/env python3
"""The compose test's fake MoviePilot v2 (version, login, subscription list, media search) and Telegram
Bot API (any /bot<token>/<method> answers ok) on one port, logging every request. Enough for
oncebot to start, run jobs and send replies; not a simulator."""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MSG_ID = [0]

class H(BaseHTTPRequestHandler):
    def _send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _route(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        path = self.path.split("?")[0]
        if path.startswith("/bot"):
            method = path.rsplit("/", 1)[-1]
            if method == "getMe":
                return self._send(200, {"ok": True, "result": {"id": 1, "is_bot": True, "first_name": "fake", "username": "fake_bot"}})
            if method in ("sendMessage", "editMessageText"):
                MSG_ID[0] += 1
                return self._send(200, {"ok": True, "result": {"message_id": MSG_ID[0], "date": 0, "chat": {"id": 111111111, "type": "private"}, "text": "x"}})
            return self._send(200, {"ok": True, "result": True})
        if path == "/api/v1/system/global":
            return self._send(200, {"success": True, "data": {"BACKEND_VERSION": "v2.9.5"}})
        if path == "/api/v1/login/access-token":
            return self._send(200, {"access_token": "fake-token", "token_type": "bearer"})
        if path.rstrip("/") == "/api/v1/subscribe":
            return self._send(200, [])
        if path == "/api/v1/media/search":
            return self._send(200, [])
        return self._send(404, {"detail": "Not Found"})

    do_GET = do_POST = do_PUT = do_DELETE = _route

    def log_message(self, fmt, *args):
        sys.stdout.write("%s %s\n" % (self.command, self.path.split("?")[0]))
        sys.stdout.flush()

ThreadingHTTPServer(("0.0.0.0", 3001), H).serve_forever()
