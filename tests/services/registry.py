"""A package registry on loopback for the tests: npm's package documents and tarballs, and
PyPI's JSON API, simple index and wheels, for packages the test defines. Nothing leaves the
machine; ``acp-model agents outdated`` and ``bump`` (and the npm and pip they run) read it as
they would read registry.npmjs.org and pypi.org."""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.server
import io
import json
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote


@dataclass
class NpmRelease:
    version: str
    published: str
    dependencies: dict[str, str] = field(default_factory=dict)
    deprecated: str = ""


@dataclass
class PypiRelease:
    version: str
    published: str
    requires: list[str] = field(default_factory=list)
    yanked: bool = False


@dataclass
class Registry:
    """What the stand-in serves: npm packages and PyPI projects, by name."""

    npm: dict[str, list[NpmRelease]] = field(default_factory=dict)
    pypi: dict[str, list[PypiRelease]] = field(default_factory=dict)
    url: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # path -> bytes (tarballs, wheels)
    hits: list[str] = field(default_factory=list)  # every path asked for

    # --- npm ---------------------------------------------------------------------------------
    def _tarball(self, name: str, release: NpmRelease) -> tuple[str, bytes]:
        manifest = {"name": name, "version": release.version,
                    "dependencies": release.dependencies}
        data = json.dumps(manifest).encode()
        buf = io.BytesIO()
        # gzip stamps its header with the time unless told: the same release must be the same
        # bytes (and integrity) whenever its package document is built
        with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as packed, \
                tarfile.open(fileobj=packed, mode="w") as tar:
            info = tarfile.TarInfo("package/package.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        path = f"/tarballs/{name.replace('/', '-')}-{release.version}.tgz"
        return path, buf.getvalue()

    def packument(self, name: str) -> dict[str, Any]:
        versions, times = {}, {"created": "2020-01-01T00:00:00.000Z"}
        for release in self.npm[name]:
            path, blob = self._tarball(name, release)
            self.files[path] = blob
            digest = base64.b64encode(hashlib.sha512(blob).digest()).decode()
            versions[release.version] = {
                "name": name, "version": release.version,
                "dependencies": release.dependencies,
                "dist": {"tarball": f"{self.url}{path}", "integrity": f"sha512-{digest}",
                         "shasum": hashlib.sha1(blob).hexdigest()},
                **({"deprecated": release.deprecated} if release.deprecated else {})}
            times[release.version] = f"{release.published}T12:00:00.000Z"
        final = [r.version for r in self.npm[name] if "-" not in r.version]
        return {"name": name, "dist-tags": {"latest": final[-1]}, "versions": versions,
                "time": times}

    # --- PyPI --------------------------------------------------------------------------------
    def _wheel(self, name: str, release: PypiRelease) -> tuple[str, bytes]:
        dist = name.replace("-", "_")
        info = f"{dist}-{release.version}.dist-info"
        metadata = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {release.version}\n"
                    + "".join(f"Requires-Dist: {r}\n" for r in release.requires))
        wheel = "Wheel-Version: 1.0\nGenerator: acp-model-tests\nRoot-Is-Purelib: true\n" \
                "Tag: py3-none-any\n"
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:  # stamped with a fixed date: the same bytes always
            for member, text in ((f"{dist}/__init__.py", ""), (f"{info}/METADATA", metadata),
                                 (f"{info}/WHEEL", wheel), (f"{info}/RECORD", "")):
                z.writestr(zipfile.ZipInfo(member, (1980, 1, 1, 0, 0, 0)), text)
        return f"/files/{dist}-{release.version}-py3-none-any.whl", buf.getvalue()

    def project(self, name: str) -> dict[str, Any]:
        releases = {}
        for release in self.pypi[name]:
            path, blob = self._wheel(name, release)
            self.files[path] = blob
            releases[release.version] = [{
                "filename": path.rsplit("/", 1)[1], "url": f"{self.url}{path}",
                "upload_time_iso_8601": f"{release.published}T12:00:00.000000Z",
                "yanked": release.yanked,
                "digests": {"sha256": hashlib.sha256(blob).hexdigest()}}]
        final = [r.version for r in self.pypi[name] if not r.yanked
                 and r.version.replace(".", "").isdigit()]
        return {"info": {"name": name, "version": final[-1]}, "releases": releases}

    def simple(self, name: str) -> str:
        links = "".join(f'<a href="{f["url"]}#sha256={f["digests"]["sha256"]}"'
                        + (' data-yanked=""' if f["yanked"] else "") + f">{f['filename']}</a>\n"
                        for files in self.project(name)["releases"].values() for f in files)
        return f"<!DOCTYPE html><html><body>\n{links}</body></html>\n"

    def answer(self, path: str) -> tuple[int, str, bytes]:
        self.hits.append(path)
        path = unquote(path.split("?", 1)[0])
        if path.startswith("/pypi/") and path.endswith("/json"):
            name = path[len("/pypi/"):-len("/json")]
            if name in self.pypi:
                return 200, "application/json", json.dumps(self.project(name)).encode()
        elif path.startswith("/simple/"):
            name = path[len("/simple/"):].strip("/")
            if name in self.pypi:
                return 200, "text/html", self.simple(name).encode()
        elif path in self.files:
            return 200, "application/octet-stream", self.files[path]
        elif path.lstrip("/") in self.npm:
            return 200, "application/json", json.dumps(self.packument(path.lstrip("/"))).encode()
        return 404, "application/json", b'{"error": "not found"}'


@contextmanager
def serve(registry: Registry) -> Iterator[Registry]:
    """``registry`` on a loopback port (its ``url`` set) for the block's length."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            code, kind, body = registry.answer(self.path)
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    registry.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield registry
    finally:
        server.shutdown()
        thread.join()
