"""The grading process: runs the rebuilt exercise and its checks (see grader.py).

Reads {"nonce", "plan", "cell_timeout"} from stdin. The registry of checks is copied
before any learner code runs, and verdicts go to stdout behind a nonce the learner's code
never sees, so neither can be forged from inside an answer cell.
"""
import json
import signal
import sys


def main() -> None:
    request = json.loads(sys.stdin.read())
    nonce, plan, cell_timeout = request["nonce"], request["plan"], float(request["cell_timeout"])
    real_stdout_write = sys.stdout.write
    from course_tools.grading import load_all, run_check
    checks = dict(load_all())  # captured before the learner's code can touch it

    def emit(item: dict) -> None:
        real_stdout_write(f"\nRESULT {nonce} {json.dumps(item)}\n")
        sys.stdout.flush()

    def on_alarm(signum, frame):
        raise TimeoutError(f"took longer than {cell_timeout:g} s (an infinite loop?)")
    signal.signal(signal.SIGALRM, on_alarm)

    namespace = {"__name__": "__main__"}
    answer_errors = []
    for step in plan:
        if step["kind"] in ("setup", "answer"):
            signal.setitimer(signal.ITIMER_REAL, cell_timeout)
            try:
                exec(compile(step["source"], f"<{step['kind']} cell>", "exec"), namespace)
            except BaseException as error:  # noqa: BLE001 - a learner's cell may raise anything
                if step["kind"] == "answer":
                    answer_errors.append(f"{type(error).__name__}: {error}")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            continue
        exercise_id = step["id"]
        ex = checks.get(exercise_id)
        if ex is None:
            emit({"id": exercise_id, "points": 0, "passed": False, "feedback": "unknown exercise"})
            continue
        missing = [name for name in ex.uses if name not in namespace]
        if missing:
            why = f"; an answer cell raised {answer_errors[-1]}" if answer_errors else ""
            emit({"id": exercise_id, "points": 0, "passed": False,
                  "feedback": f"{', '.join(missing)} is not defined{why}"})
            continue
        signal.setitimer(signal.ITIMER_REAL, cell_timeout)
        try:
            result = run_check(exercise_id, *(namespace[n] for n in ex.uses), registry=checks)
            item = {"id": result.id, "points": result.points, "passed": result.passed,
                    "feedback": result.feedback}
        except BaseException as error:  # noqa: BLE001 - the timeout lands here
            item = {"id": exercise_id, "points": 0, "passed": False,
                    "feedback": f"{type(error).__name__}: {error}"}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        emit(item)


if __name__ == "__main__":
    main()
