"""The server extension routes kernel websockets to a handler that sets TCP_NODELAY."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = r'''
import json, sys, uuid
from jupyter_server.serverapp import ServerApp
from tornado.httputil import HTTPServerRequest

app = ServerApp()
app.initialize(argv=["--ServerApp.root_dir=" + sys.argv[1], "--ServerApp.jpserver_extensions=" + sys.argv[2]], new_httpserver=False)

def handler_for(path):
    request = HTTPServerRequest(method="GET", uri=path, headers={"Host": "localhost"})
    delegate = app.web_app.find_handler(request)
    return delegate.handler_class

print(json.dumps({
    "channels": handler_for(f"/api/kernels/{uuid.uuid4()}/channels").__name__,
    "kernels": handler_for("/api/kernels").__name__,
}))
'''


def route(tmp_path, enabled: bool) -> dict:
    run = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), f"unified_exec_kernel={enabled}"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_kernel_channels_use_the_no_delay_handler(tmp_path):
    assert route(tmp_path, True) == {"channels": "NoDelayKernelWebsocketHandler", "kernels": "MainKernelHandler"}


def test_disabled_extension_leaves_the_server_as_it_was(tmp_path):
    assert route(tmp_path, False)["channels"] == "KernelWebsocketHandler"

