"""Notebooks written the way JupyterLab shows them: used by `course store`, `course start` and
`course site`.

- `jupyterlab_metadata`: the notebook metadata JupyterLab writes when it opens a notebook on the
  course kernel (`kernelspec` with the course kernel's name and display name, the kernel's
  `language_info`, nbformat 4.5 with cell ids). JupyterLab compares what it would write with what
  the file holds and marks the notebook modified when they differ; a notebook that already holds
  them opens unmodified. (`language_info` names the Python version: a notebook stored with 3.11.7
  and opened on 3.11.9 still gets its version updated, and is then marked modified.)
- `collapse_streams`: a cell's stdout/stderr as the page shows it after the cell ran. A tqdm bar
  writes each state after a carriage return (`\\r  0%|...`, `\\r 68%|...`, `\\r100%|...`);
  JupyterLab draws only the last one, a static page would draw them all.
- `strip_test_markers`: code without the `# NBVAL_CHECK_OUTPUT` (and other `# NBVAL_...`) lines,
  which tell nbval what to compare and mean nothing to a reader of the website.
"""
from __future__ import annotations

import re

import nbformat

from .lab import KERNEL_DISPLAY_NAME, KERNEL_NAME   # the course kernel `course lab` installs
NBVAL_LINE = re.compile(r"^[ \t]*# ?NBVAL_[A-Z_]+[^\n]*(\n|$)", re.M)


def kernelspec() -> dict:
    return {"display_name": KERNEL_DISPLAY_NAME, "language": "python", "name": KERNEL_NAME}


def language_info() -> dict:
    """What the course kernel (ipykernel, on this Python) reports, as JupyterLab stores it."""
    try:
        from ipykernel.ipkernel import IPythonKernel
        return dict(IPythonKernel.language_info)
    except Exception:  # noqa: BLE001 - no ipykernel: the same fields, as ipykernel 6-7 fills them
        import sys
        return {"name": "python", "version": sys.version.split()[0], "mimetype": "text/x-python",
                "codemirror_mode": {"name": "ipython", "version": sys.version_info[0]},
                "pygments_lexer": "ipython3", "nbconvert_exporter": "python", "file_extension": ".py"}


def jupyterlab_metadata(nb, language: dict | None = None):
    """Give `nb` (a NotebookNode, changed in place and returned) what JupyterLab would add on
    opening it: the course kernelspec, `language_info` (`language`, else the stored one if any,
    else this Python's), nbformat 4.5 and an id on every cell."""
    nb.metadata["kernelspec"] = kernelspec()
    if language is not None:
        nb.metadata["language_info"] = dict(language)
    elif "language_info" not in nb.metadata:
        nb.metadata["language_info"] = language_info()
    if (nb.nbformat, nb.get("nbformat_minor", 0)) < (4, 5):
        nb.nbformat, nb.nbformat_minor = 4, 5
    for cell in nb.cells:
        if not cell.get("id"):
            cell["id"] = nbformat.v4.new_code_cell().id  # a fresh random id, as nbformat makes them
    return nb


def _final_text(text: str) -> str:
    """Each line as a terminal leaves it: what follows its last carriage return."""
    lines = text.replace("\r\n", "\n").split("\n")
    out = []
    for line in lines:
        parts = line.split("\r")
        shown = [p for p in parts if p] or [""]
        out.append(shown[-1])
    return "\n".join(out)


def collapse_streams(outputs: list) -> list:
    """Merge consecutive stream outputs of the same stream and keep each line's final state."""
    merged: list = []
    for output in outputs:
        if (output.get("output_type") == "stream" and merged
                and merged[-1].get("output_type") == "stream" and merged[-1].get("name") == output.get("name")):
            previous = merged[-1]
            previous["text"] = _text(previous["text"]) + _text(output["text"])
        else:
            merged.append(nbformat.NotebookNode(output))   # a copy: the caller's outputs stay as they were
    for output in merged:
        if output.get("output_type") == "stream":
            output["text"] = _final_text(_text(output["text"]))
    return [o for o in merged if not (o.get("output_type") == "stream" and o["text"] == "")]


def _text(text) -> str:
    return "".join(text) if isinstance(text, list) else str(text)


def strip_test_markers(source) -> str:
    return NBVAL_LINE.sub("", _text(source))
