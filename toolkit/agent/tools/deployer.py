"""Deployer: serves a built folder on a loopback port for the rest of the session (no public host is
reachable from here). It answers only with regular files inside the folder and the workspace, never
through a symlink leading out (``static_server.py``). Under ``local`` the server runs in this process and the URL
works on the host;
under ``bubblewrap`` (or a container) it runs inside the sandbox, so the URL works there (the Terminal, the
task checks) — the sandbox's loopback is its own unless the role sets ``network: true``.
ImageGetter: writes a labelled placeholder PNG (offline: no image search)."""

from __future__ import annotations

import struct
import threading
import zlib
from http.server import ThreadingHTTPServer

from toolkit.agent.environments.beneath import Refused
from toolkit.agent.environments.environment import Environment, EnvironmentUnavailable, LocalEnvironment
from toolkit.agent.environments.static_server import make_handler
from toolkit.agent.tools.base import ToolError, tool
from toolkit.agent.environments.workspace import Workspace


class Deployer:
    def __init__(self, workspace: Workspace, environment: Environment | None = None):
        self.workspace = workspace
        self.environment = environment
        self.servers: list[ThreadingHTTPServer] = []

    @tool(exclusive=True)
    def deploy_to_public(self, dist_dir: str) -> str:
        """Serve a folder that holds an index.html, and return its URL (on 127.0.0.1, for this session).

        Args:
            dist_dir: the folder to serve, relative to the workspace.
        """
        folder = self.workspace.path(dist_dir, must_exist=True)
        if not self.workspace.tree.is_file(f"{self.workspace.rel(folder)}/index.html"):  # beneath the workspace
            raise ToolError(f"{dist_dir} has no index.html (a regular file inside the workspace); build the site first")
        if self.environment is None or isinstance(self.environment, LocalEnvironment):
            return self._done(dist_dir, self._serve_here(folder))  # the host's loopback is the shell's too
        return self._serve_in_environment(dist_dir, folder)  # a coroutine: the Toolbox awaits it

    def _serve_here(self, folder) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(str(folder), str(self.workspace.root)))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    async def _serve_in_environment(self, dist_dir: str, folder) -> str:
        try:
            return self._done(dist_dir, await self.environment.serve(folder))
        except EnvironmentUnavailable as exc:
            raise ToolError(str(exc)) from None

    def _done(self, dist_dir: str, url: str) -> str:
        self.workspace.write_private("deploy_url.txt", url)  # for scripts: curl $(cat .agent/deploy_url.txt)
        return f"Deployed {dist_dir} at {url}"

    def close(self) -> None:
        """Stops the servers served from here; those inside an environment end with its session."""
        for server in self.servers:
            server.shutdown()
            server.server_close()
        self.servers.clear()


def placeholder_png(width: int, height: int, label: str) -> bytes:
    """A grey PNG of the given size whose label travels in a tEXt chunk (no image library needed)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + b"\xc8\xc8\xc8" * width
    raw = zlib.compress(row * height, 9)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"tEXt", b"Title\x00" + label.encode("latin-1", "replace")) + chunk(b"IDAT", raw)
            + chunk(b"IEND", b""))


class ImageGetter:
    def __init__(self, workspace: Workspace):
        self.workspace = workspace

    @tool
    def get_image(self, search_term: str, image_path: str, width: int = 320, height: int = 240) -> str:
        """Offline stand-in for an image search: writes a grey placeholder PNG of the requested size,
        labelled with the search term (in the PNG's Title field), at ``image_path``.

        Args:
            search_term: what the image should show (becomes its label).
            image_path: where to write the PNG, relative to the workspace.
            width: pixels, 1..4096.
            height: pixels, 1..4096.
        """
        if not (1 <= width <= 4096 and 1 <= height <= 4096):
            raise ToolError("width and height must be between 1 and 4096")
        target = self.workspace.path(image_path)
        try:  # atomic, beneath the workspace: no link out followed, a FIFO or device refused
            self.workspace.tree.write_bytes(self.workspace.rel(target),
                                            placeholder_png(width, height, f"placeholder: {search_term}"), parents=True)
        except Refused as exc:
            raise ToolError(f"{image_path}: {exc.strerror}") from None
        except (NotADirectoryError, IsADirectoryError) as exc:
            raise ToolError(f"{image_path}: {exc.strerror}") from None
        return f"Wrote a {width}x{height} placeholder for {search_term!r} to {image_path}"
