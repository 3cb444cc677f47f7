"""A local stand-in for the Hugging Face Hub API on 127.0.0.1: just the calls ``HfApi`` makes
for ``create_repo``, ``list_repo_files`` and ``create_commit`` (repos/create, tree, validate-yaml, preupload, commit), every call recorded
and every committed file's bytes kept, so a test sees what arrived where."""

from __future__ import annotations

import base64
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_REPO = r"/api/(?P<type>models|datasets|spaces)/(?P<repo>[^/]+/[^/]+)"
PREUPLOAD = re.compile(_REPO + r"/preupload/(?P<rev>[^/?]+)")
COMMIT = re.compile(_REPO + r"/commit/(?P<rev>[^/?]+)")
TREE = re.compile(_REPO + r"/tree/(?P<rev>[^/?]+)")


class FakeHub:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []  # (method, path)
        self.repos: dict[str, dict] = {}  # repo id → the create payload
        self.files: dict[tuple[str, str], bytes] = {}  # (repo id, path in repo) → content
        self.commits: list[dict] = []
        self.validated: list[str] = []  # the README.md texts sent to validate-yaml
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _reply(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def do_GET(self):
                hub.calls.append(("GET", self.path))
                if self.path.startswith("/api/whoami"):
                    return self._reply(200, {"name": "fake-user", "type": "user", "auth": {}})
                if m := TREE.match(self.path):  # one page, every file of the repository
                    held = sorted(p for repo, p in hub.files if repo == m["repo"])
                    size = {p: len(c) for (repo, p), c in hub.files.items() if repo == m["repo"]}
                    return self._reply(
                        200, [{"type": "file", "path": p, "size": size[p], "oid": "0" * 40} for p in held]
                    )
                return self._reply(404, {"error": f"not faked: GET {self.path}"})

            def do_POST(self):
                hub.calls.append(("POST", self.path))
                body = self._body()
                base = f"http://{self.headers['Host']}"
                if self.path.startswith("/api/repos/create"):
                    payload = json.loads(body)
                    repo_id = f"{payload['organization']}/{payload['name']}"
                    hub.repos[repo_id] = payload
                    return self._reply(200, {"url": f"{base}/datasets/{repo_id}"})
                if self.path.startswith("/api/validate-yaml"):  # a README.md's front matter, checked before a commit
                    hub.validated.append(json.loads(body)["content"])
                    return self._reply(200, {"errors": [], "warnings": []})
                if m := PREUPLOAD.match(self.path):
                    files = json.loads(body)["files"]
                    modes = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
                    return self._reply(200, {"files": modes})
                if m := COMMIT.match(self.path):
                    lines = [json.loads(line) for line in body.splitlines() if line.strip()]
                    header = next(x["value"] for x in lines if x["key"] == "header")
                    paths = []
                    for item in lines:
                        if item["key"] == "file":
                            value = item["value"]
                            hub.files[(m["repo"], value["path"])] = base64.b64decode(value["content"])
                            paths.append(value["path"])
                    hub.commits.append({"repo": m["repo"], "summary": header["summary"], "paths": paths})
                    oid = f"{len(hub.commits):040x}"
                    return self._reply(
                        200, {"commitUrl": f"{base}/datasets/{m['repo']}/commit/{oid}", "commitOid": oid}
                    )
                return self._reply(404, {"error": f"not faked: POST {self.path}"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
