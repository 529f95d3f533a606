"""Deployer: serves a built folder on a loopback port for the rest of the session (no public host is
reachable from here). The server runs inside the session's environment (``static_server.py``) and answers
only with regular files inside the folder and the workspace, never through a symlink leading out. Under
``local`` the URL works on the host; under ``bubblewrap`` (or a container) it works inside the sandbox (the
Terminal, the task checks): the sandbox's network is its own.
ImageGetter: writes a labelled placeholder PNG (offline: no image search), through the environment."""

from __future__ import annotations

import posixpath
import struct
import zlib

from toolkit.agent.environments.environment import Environment, EnvironmentUnavailable
from toolkit.agent.tools.base import ToolError, tool
from toolkit.agent.environments.workspace import Workspace


class Deployer:
    def __init__(self, workspace: Workspace, environment: Environment | None = None):
        self.workspace = workspace
        self.environment = environment or workspace.environment
        self.urls: list[str] = []

    @tool(exclusive=True)
    async def deploy_to_public(self, dist_dir: str) -> str:
        """Serve a folder that holds an index.html, and return its URL (on 127.0.0.1, for this session).

        Args:
            dist_dir: the folder to serve, relative to the workspace.
        """
        folder = self.workspace.path(dist_dir, must_exist=True)
        if self.workspace.kind(posixpath.join(folder, "index.html")) != "file":
            raise ToolError(f"{dist_dir} has no index.html (a regular file inside the workspace); build the site first")
        try:
            url = await self.environment.serve(folder)
        except EnvironmentUnavailable as exc:
            raise ToolError(str(exc)) from None
        self.urls.append(url)
        self.workspace.write_bytes(".agent/deploy_url.txt", url.encode())  # for scripts: curl $(cat …)
        return f"Deployed {dist_dir} at {url}"

    def close(self) -> None:
        """The servers end with the session's environment."""
        self.urls.clear()


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
        self.workspace.write_bytes(target, placeholder_png(width, height, f"placeholder: {search_term}"))
        return f"Wrote a {width}x{height} placeholder for {search_term!r} to {image_path}"
