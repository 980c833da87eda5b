"""`course sweep`: every lesson at seeds 0-9, and at SEED=1 with 2 torch threads.

A claim that holds at one seed on one machine may be a coin flip. The sweep re-runs each lesson
under several seeds and once with another thread count (reductions then round differently, as
they would on another CPU), reads every `claim(...)` the evidence cells recorded (see
`course_lib.evidence`), and writes:

- `docs/sweep/runs/<lesson>.json` (committed): the run ledger. Per lesson, the code digest its runs
  were made from and, per run, its time, outcome, claims and checked-output texts. Everything below
  is derived from it, so a sweep stopped on one machine is continued on another (`--resume` skips
  the runs the ledger holds for the lesson's current code) and nothing depends on `build/`;
- `build/sweep.csv`: one row per lesson, run and claim: measured value, threshold, margin;
- `build/sweep_runs.csv`: one row per lesson and run: seconds, claims held, error;
- `docs/sweep/claims.csv` (committed): one row per lesson and claim over all the runs: its kind,
  lowest and highest value, threshold, and how many seed ranges its worst run sat from failing,
  so that the table can be checked (and the cheat sheet show ranges) without re-running;
- with `--update-readme`, the robustness table of `docs/results.md` (between `<!-- sweep:begin -->` and
  `<!-- sweep:end -->`): per lesson, the runs whose claims held, the evidence claim with the
  fewest seed ranges between its worst run and its threshold, and the count of the claims that
  are not evidence (identities, fixed-input measurements, equalities with `course_lib`);
- `docs/sweep/checked_outputs.json` (committed): per lesson and `# NBVAL_CHECK_OUTPUT` cell, the text
  each run printed there, as the ledger recorded it from the executed notebook. A checked output is
  compared character by character by nbval on whatever CPU runs the tests, so it must be an exact
  fact; a text that changes with the seed would also change with the CPU. `tests/test_checked_outputs.py`
  requires every checked cell to have printed one text in every recorded run, equal to the stored one.

One job per module, read in this order:

- `ledger.py`: the runs (`Run`, `DEFAULT_RUNS`), the code digest a run is made from, and reading
  and recording the committed ledger;
- `checked_outputs.py`: the `# NBVAL_CHECK_OUTPUT` cells' texts, recorded from the ledger and checked;
- `statistics.py`: over the runs, per claim: its spread, thin and undeclared claims, the central
  claim, the robustness table;
- `results.py`: the files derived from the ledger: `build/sweep*.csv`, `docs/sweep/claims.csv`,
  the robustness block of `docs/results.md` (`collect`, `update_readme`);
- `running.py`: running the lessons at each run, in worker processes (`sweep`).

Nothing is imported here: `from course_tools.sweep.<module> import name`.
"""
