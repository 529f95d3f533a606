"""The Deployer's web server, started inside the session's execution environment:
``python -I static_server.py FOLDER WORKSPACE`` serves FOLDER on 127.0.0.1 on a free port, prints that port
on its standard output (a pipe the host reads; no file the sandbox could replace), then detaches (a new
session, standard streams on /dev/null) and the command returns. It answers only with regular files whose
real path (symlinks resolved) lies inside both FOLDER and WORKSPACE; anything else (a symlink out, a FIFO,
a device, a folder without index.html) is a 404. Standard library only: it runs as a script (and the
``local`` Deployer serves with the same handler in process)."""

import os
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer


def make_handler(folder: str, workspace: str) -> type:
    folder, workspace = os.path.realpath(folder), os.path.realpath(workspace)

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=folder, **kwargs)

        def log_message(self, *args) -> None:
            pass

        def send_head(self):
            path = self.translate_path(self.path)
            if os.path.isdir(path):
                path = os.path.join(path, "index.html")
            real = os.path.realpath(path)
            inside = all(real == root or real.startswith(root + os.sep) for root in (folder, workspace))
            if not inside or not os.path.isfile(real):  # isfile: regular files only (no FIFO, no device)
                self.send_error(404, "File not found")
                return None
            self.path = "/" + os.path.relpath(real, folder).replace(os.sep, "/")
            return super().send_head()

    return Handler


def main() -> None:
    folder, workspace = (os.path.realpath(p) for p in sys.argv[1:3])
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(folder, workspace))
    server.daemon_threads = True
    print(server.server_address[1], flush=True)  # before the fork: the command's output, then it returns
    if os.fork():
        os._exit(0)
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    server.serve_forever()


if __name__ == "__main__":
    main()
