"""`course --help` lists every command once, in three groups (learner, instructor, maintainer), one
line each; `course COMMAND --help` still shows the command's options; `course run` ends by saying
what to do next."""
import pandas as pd
import pytest

from course_tools import cli, commands

pytestmark = pytest.mark.unit


def _help(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_course_help_lists_every_command_once_in_three_groups(capsys):
    out = _help(capsys, ["--help"])
    headings = [line for line in out.splitlines() if line.endswith(" commands:")]
    assert headings == ["learner commands:", "instructor commands:", "maintainer commands:"]
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and not line.startswith("  -")]
    assert sorted(listed) == sorted(n for group in cli.GROUPS.values() for n in group)
    assert len(listed) == len(set(listed)) == 16
    assert "{run,sweep" not in out                      # no argparse list of every choice
    assert all(len(line) <= 100 for line in out.splitlines())


@pytest.mark.parametrize("command,option", [("run", "--only"), ("grade", "--json"), ("grade-class", "--roster"),
                                            ("sweep", "--resume"), ("interview", "--whiteboard"),
                                            ("start", "--open"), ("progress", "--csv")])
def test_each_command_keeps_its_own_help(capsys, command, option):
    out = _help(capsys, [command, "--help"])
    assert out.startswith(f"usage: course {command} ") and option in out


def test_course_run_ends_with_what_to_do_next(monkeypatch, tmp_path, capsys):
    from course_tools import runner
    summary = tmp_path / "summary.md"
    summary.write_text("| lesson |\n")
    monkeypatch.setattr(runner, "run_lessons", lambda lessons, seed, timeout, jobs=1: pd.DataFrame({"claims held": ["yes"]}))
    monkeypatch.setattr(runner, "write_summary", lambda table, seed, wall_seconds=None: summary)
    monkeypatch.setattr(commands, "ROOT", tmp_path)
    assert cli.main(["run", "--only", "00"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == commands.NEXT_STEP and "make lab" in last and "course start 00" in last
