"""Notebooks as JupyterLab shows and saves them (course_tools.nbtidy, issue 18 "Looks"): what
`course store`, `course start` and `course site` write."""
import json

import nbformat

from course_tools import lab, nbtidy, runner
from course_tools.manifest import LESSONS


def stream(text, name="stderr"):
    return nbformat.v4.new_output("stream", name=name, text=text)


def test_a_progress_bar_keeps_only_its_final_state_per_line():
    outputs = [stream("\rtrain:   0%|          | 0/200"), stream("\rtrain:  68%|######    | 136/200"),
               stream("\rtrain: 100%|##########| 200/200"), stream("\n"), stream("\reval:   0%|"),
               stream("\reval: 100%|"), stream("\n"), stream("loss 0.1\n", "stdout"),
               nbformat.v4.new_output("display_data", data={"text/plain": "fig"}), stream("done\r\n", "stdout")]
    tidy = nbtidy.collapse_streams(outputs)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in tidy] == [
        ("stream", "stderr", "train: 100%|##########| 200/200\neval: 100%|\n"),
        ("stream", "stdout", "loss 0.1\n"), ("display_data", None, None), ("stream", "stdout", "done\n")]
    assert outputs[0].text == "\rtrain:   0%|          | 0/200"            # the input is left alone


def test_nbval_markers_are_dropped_from_displayed_code_only():
    source = "# NBVAL_CHECK_OUTPUT\nprint(round(x, 2))\n    # NBVAL_SKIP\nprint('# NBVAL_ in a string stays')"
    assert nbtidy.strip_test_markers(source) == "print(round(x, 2))\nprint('# NBVAL_ in a string stays')"


def test_a_stored_lesson_gets_the_metadata_jupyterlab_writes():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    nb.nbformat_minor = 4
    nb.metadata = {"language_info": {"name": "python", "version": "3.11.7"}}
    nb.cells[0].outputs = [stream("\ra 0%"), stream("\ra 100%\n")]
    nb.cells[0].metadata["execution"] = {"iopub.status.busy": "..."}
    runner.tidy_stored(nb)
    assert nb.metadata.kernelspec == {"display_name": lab.KERNEL_DISPLAY_NAME, "language": "python",
                                      "name": lab.KERNEL_NAME}
    assert nb.metadata.language_info == {"name": "python", "version": "3.11.7"}   # the kernel's, as stored
    assert nb.nbformat_minor == 5 and nb.cells[0].id and "execution" not in nb.cells[0].metadata
    assert nb.cells[0].outputs[0].text == "a 100%\n"
    assert lab.kernel_spec()["display_name"] == nb.metadata.kernelspec["display_name"]


def test_every_stored_lesson_opens_in_jupyterlab_unmodified():
    """JupyterLab writes the kernelspec and language_info of the kernel it starts into a notebook it
    opens and marks it modified when they differ from the file's. Re-store a lesson that fails
    (`course store --only NN`)."""
    stale = []
    for lesson in LESSONS:
        nb = json.loads(lesson.notebook.read_text(encoding="utf-8"))
        if (nb["metadata"].get("kernelspec") != nbtidy.kernelspec() or "language_info" not in nb["metadata"]
                or (nb["nbformat"], nb["nbformat_minor"]) < (4, 5)):
            stale.append(lesson.notebook.name)
    assert not stale, f"lessons JupyterLab would mark modified on opening (run `course store --only NN`): {stale}"
