"""`make lab` / `course lab`: JupyterLab opens at the lesson map, on the course kernel, with no
news or update pop-up and no kernel-selection dialog, from settings inside the environment.

The server is started headless exactly as `course lab` starts it (plus a free port and a token),
with the user-level Jupyter folders pointed at an empty temporary folder so that the learner's own
settings cannot make the test pass; the effective settings are read through JupyterLab's REST API.
(A real browser opening the page is the browser tests' job.)
"""
from __future__ import annotations

import json
import re
import sys
import urllib.request
from pathlib import Path

import pytest

from course_tools import ROOT, lab


def _get(url: str, redirect: bool = True):
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None
    opener = urllib.request.build_opener() if redirect else urllib.request.build_opener(NoRedirect)
    try:
        response = opener.open(url, timeout=10)
        return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    lab.configure()  # what `make install` and `course lab` do; idempotent
    home = tmp_path_factory.mktemp("home")
    env = {"HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
    try:
        with lab.serve(ROOT, home / "lab.log", env=env) as (base, token):
            yield base, token
    except RuntimeError as error:
        pytest.fail(str(error))


def _settings(server, plugin: str) -> dict:
    base, token = server
    status, _, body = _get(f"{base}/lab/api/settings/{plugin}?token={token}")
    assert status == 200, body[:500]
    reply = json.loads(body)
    # the effective value, as the page computes it: the user's setting, else the schema's default
    # (which the environment's overrides have replaced)
    defaults = {key: prop.get("default") for key, prop in reply["schema"]["properties"].items()}
    return {**defaults, **reply["settings"]}


def test_no_news_or_update_popup(server):
    settings = _settings(server, "@jupyterlab/apputils-extension:notification")
    assert settings["fetchNews"] == "false"  # the default "none" asks "get notified about Jupyter news?"
    assert settings["checkForUpdates"] is False
    base, token = server
    status, _, body = _get(f"{base}/lab/api/news?token={token}")
    assert status == 200 and json.loads(body)["news"] == []
    status, _, body = _get(f"{base}/lab?token={token}")
    page_config = json.loads(re.search(r'id="jupyter-config-data"[^>]*>(.*?)</script>', body, re.S).group(1))
    assert page_config["news"] == {"disabled": True}


def test_notebooks_without_kernel_metadata_start_the_kernel_without_asking(server):
    assert _settings(server, "@jupyterlab/notebook-extension:tracker")["autoStartDefaultKernel"] is True


def test_the_course_kernel_is_this_environment(server):
    base, token = server
    status, _, body = _get(f"{base}/api/kernelspecs?token={token}")
    specs = json.loads(body)
    assert specs["default"] == lab.KERNEL_NAME
    assert list(specs["kernelspecs"]) == [lab.KERNEL_NAME]
    argv = specs["kernelspecs"][lab.KERNEL_NAME]["spec"]["argv"]
    assert Path(argv[0]) == Path(sys.executable)


def test_opens_at_the_lesson_map(server):
    base, token = server
    status, headers, _ = _get(f"{base}/?token={token}", redirect=False)
    assert status in (301, 302) and headers["Location"].split("?")[0].endswith("/lab/tree/" + lab.START_NOTEBOOK)
    assert (ROOT / lab.START_NOTEBOOK).exists()


def test_settings_live_in_the_environment_not_in_home():
    paths = lab.settings_paths()
    for path in paths.values():
        assert path.exists() and Path(sys.prefix) in path.parents, path
    makefile = (ROOT / "Makefile").read_text()
    assert "course lab --configure-only" in makefile
