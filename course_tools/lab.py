"""`course lab`: JupyterLab on the course, quiet and ready, configured inside the course environment.

`make install` (and every `course lab`) writes three small files under `sys.prefix` - the
virtual environment, never the learner's home:

- `share/jupyter/lab/settings/overrides.d/course.json`: JupyterLab setting defaults - no
  "Would you like to get notified about official Jupyter news?" question, no update check,
  and a notebook without kernel metadata starts the default kernel instead of asking.
  They are defaults: a learner's own settings (Settings menu) still win.
- `etc/jupyter/jupyter_lab_config.json` (its `LabApp` keys, merged into whatever else is there): the
  server side of the same (no news feed, no update check), so nothing is fetched even if a setting
  is changed. (A `.d` folder would not do: Jupyter reads those only to enable server extensions.)
- `share/jupyter/kernels/python3/kernel.json`: the course kernel, pinned to this
  environment's Python, so that a `python3` kernel elsewhere cannot take its place.

JupyterLab then opens at `notebooks/00_welcome.ipynb`, whose lesson map links every lesson (or at
the notebook named on the command line: `course lab work/01_scale_sqrt_dk.ipynb`); every other
argument goes on to `jupyter lab` (`course lab --port 8899 --no-browser`).

Commands where they are typed: the server (and so its terminals and kernels) runs with this
environment's `bin/` first on PATH, so `course check 01` works in JupyterLab's own terminal without
activating anything, and the terminals start as plain interactive shells rather than login shells
(a login shell re-reads /etc/profile, which resets PATH on Debian and Ubuntu).
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import urllib.parse
from pathlib import Path

from . import ROOT

START_NOTEBOOK = "notebooks/00_welcome.ipynb"
KERNEL_NAME = "python3"
KERNEL_DISPLAY_NAME = "Python 3 (ipykernel)"  # as ipykernel names it: opening a notebook changes no metadata

LAB_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension:tracker": {"autoStartDefaultKernel": True},
}
SERVER_CONFIG = {
    "LabApp": {"news_url": None,
               "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate"},
}


def settings_paths(prefix: str | os.PathLike = sys.prefix) -> dict[str, Path]:
    prefix = Path(prefix)
    return {
        "lab": prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.d" / "course.json",
        "server": prefix / "etc" / "jupyter" / "jupyter_lab_config.json",
        "kernel": prefix / "share" / "jupyter" / "kernels" / KERNEL_NAME / "kernel.json",
    }


def kernel_spec(python: str = sys.executable) -> dict:
    return {"argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": KERNEL_DISPLAY_NAME, "language": "python",
            "metadata": {"debugger": True}}


def _write_json(path: Path, content: dict) -> bool:
    text = json.dumps(content, indent=2) + "\n"
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def configure(prefix: str | os.PathLike = sys.prefix, python: str = sys.executable) -> list[Path]:
    """Write the course's JupyterLab settings into the environment; return the files changed."""
    paths = settings_paths(prefix)
    changed = []
    server = json.loads(paths["server"].read_text(encoding="utf-8")) if paths["server"].exists() else {}
    for section, values in SERVER_CONFIG.items():
        server.setdefault(section, {}).update(values)
    for key, content in (("lab", LAB_OVERRIDES), ("server", server), ("kernel", kernel_spec(python))):
        if _write_json(paths[key], content):
            changed.append(paths[key])
    return changed


def command(extra: list[str] | None = None) -> list[str]:
    """The JupyterLab command line `course lab` runs (from the project root)."""
    root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []  # containers
    shell = os.environ.get("SHELL") or "sh"
    terminals = json.dumps({"shell_command": [shell]})   # not a login shell: see the module docstring
    extra = list(extra or [])
    start = [] if any(a.startswith("--LabApp.default_url=") for a in extra) else \
        [f"--LabApp.default_url=/lab/tree/{START_NOTEBOOK}"]
    return [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={ROOT}", *start,
            f"--ServerApp.terminado_settings={terminals}", *root, *extra]


def open_at(notebook) -> str:
    """The option that opens JupyterLab at `notebook` (a path inside the course) instead of the map."""
    path = Path(notebook).expanduser().resolve()
    try:
        relative = path.relative_to(ROOT).as_posix()
    except ValueError:
        raise ValueError(f"{notebook}: JupyterLab serves the course folder ({ROOT}); copy the notebook "
                         "into it (work/ is yours) to open it here") from None
    if not path.exists():
        raise ValueError(f"{notebook}: no such notebook")
    return f"--LabApp.default_url=/lab/tree/{urllib.parse.quote(relative)}"


def arguments(given: list[str] | None) -> list[str]:
    """`course lab`'s arguments as jupyter lab takes them: a `--` is dropped, a notebook path
    becomes the page to open, everything else goes on unchanged."""
    out = []
    for arg in given or []:
        if arg == "--":
            continue
        if not arg.startswith("-") and arg.endswith(".ipynb"):
            out.append(open_at(arg))
        else:
            out.append(arg)
    return out


def bin_dir() -> Path:
    """This environment's scripts folder (`.venv/bin`, where `course` lives). Not resolved: in a
    virtual environment `python` is a link to the base interpreter, whose folder has no `course`."""
    return Path(sys.executable).parent


def environment() -> dict[str, str]:
    # Environment-level Jupyter paths (this venv's kernel and settings) before the user's, and this
    # environment's bin/ first on PATH: the server's terminals and kernels inherit both.
    env = {**os.environ, "JUPYTER_PREFER_ENV_PATH": "1"}
    here = str(bin_dir())
    env["PATH"] = os.pathsep.join([here] + [p for p in env.get("PATH", "").split(os.pathsep) if p and p != here])
    if sys.prefix != sys.base_prefix:      # a virtual environment, as `activate` would say
        env["VIRTUAL_ENV"] = sys.prefix
    return env


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(cwd: Path, log_path: Path, env: dict[str, str] | None = None,
          extra: list[str] | None = None, timeout: float = 120):
    """JupyterLab as `course lab` starts it, headless on a free local port with a token, until the
    block ends. Yields (base URL, token). `extra` arguments replace `course lab`'s own of the same
    name (e.g. another root folder); `env` is added to `course lab`'s environment."""
    import secrets
    import subprocess
    import time
    import urllib.request

    port, token = free_port(), secrets.token_hex(16)
    extra = ["--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", *(extra or [])]
    replaced = tuple(arg.split("=")[0] + "=" for arg in extra if "=" in arg)
    cmd = [arg for arg in command() if not arg.startswith(replaced)] + extra
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "w") as log:
        server = subprocess.Popen(cmd, cwd=cwd, env={**environment(), **(env or {})},
                                  stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                        break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        log.flush()
                        raise RuntimeError("JupyterLab did not start:\n"
                                           + Path(log_path).read_text()[-3000:]) from None
                    time.sleep(0.5)
            yield base, token
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
