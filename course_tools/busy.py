"""A lesson-like PyTorch workload timed quiet and under background load, in a worker process.

The thread settings that decide whether a busy machine collapses PyTorch (OMP_NUM_THREADS,
OMP_WAIT_POLICY) are read when OpenMP starts, so each setting is measured in its own worker
process started with that environment. The worker runs a short workload shaped like the
lessons' (training steps and a batch-1 forward pass of a small BERT, `course_lib.bert`) whenever
the parent asks; the parent times it in interleaved rounds, quiet and with `burners` background
processes (`course_lib.timing.busy_cores`), the order of the two alternating from round to round,
so that a slow spell of a shared machine hits both alike.

    python -m course_tools.busy            # with and without the thread policy, 2 burners

tests/test_threads.py asserts the policy's ratio (busy / quiet, medians) stays under 2.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
from dataclasses import dataclass, field

from course_tools.threads import PASSIVE_WAIT, THREAD_VARIABLES, thread_env, threads_for

from . import ROOT


def _workload():
    """A closure running one unit of lesson-like work: 2 training steps (8 x 64 tokens) and
    4 batch-1 forwards (1 x 64) of a 2-layer BERT with hidden size 128."""
    import torch

    from course_lib.bert import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=512, max_position_embeddings=128)
    model = BertModel(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(5, 1000, (8, 64), generator=torch.Generator().manual_seed(0))
    types, mask = torch.zeros_like(ids), torch.ones_like(ids)

    def unit():
        for _ in range(2):
            optimizer.zero_grad()
            model(ids, types, mask).last_hidden_state.pow(2).mean().backward()
            optimizer.step()
        with torch.inference_mode():
            for _ in range(4):
                model(ids[:1], types[:1], mask[:1])
    return unit


def _python_workload():
    """A unit of single-threaded pure-Python work (~0.1-0.2 s on a laptop core): a program that
    cannot collapse, whose busy / quiet ratio is the machine's fair-share slow-down."""
    def unit():
        x = 0
        for i in range(1_500_000):
            x += i * i
    return unit


def _serve(kind: str = "torch") -> None:
    """The worker: says "ready", then for each line "N" on stdin runs N units and prints seconds."""
    import time

    unit = _workload() if kind == "torch" else _python_workload()
    unit()                                                   # warm-up
    print("ready", flush=True)
    for line in sys.stdin:
        n = int(line)
        start = time.perf_counter()
        for _ in range(n):
            unit()
        print(time.perf_counter() - start, flush=True)


def policy_env(jobs: int = 1) -> dict[str, str]:
    """The environment of a job under the course's thread policy (`course_tools.threads`)."""
    return thread_env(threads_for(jobs))


def default_env() -> dict[str, str]:
    """No thread settings at all: torch's defaults (every core, OpenMP threads that spin)."""
    return {name: None for name in (*THREAD_VARIABLES, *PASSIVE_WAIT)}


class Worker:
    """A worker process with `env` (None values: removed) laid over this process's environment."""

    def __init__(self, env: dict[str, str | None], kind: str = "torch"):
        full = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        for key, value in env.items():
            if value is None:
                full.pop(key, None)
            else:
                full[key] = value
        self.proc = subprocess.Popen([sys.executable, "-m", "course_tools.busy", "--serve", kind],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=full,
                                     cwd=str(ROOT))
        if self.proc.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError("course_tools.busy worker did not start")

    def time(self, units: int) -> float:
        self.proc.stdin.write(f"{units}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass
class BusyTiming:
    quiet: list[float] = field(default_factory=list)
    busy: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """The median over rounds of busy seconds / quiet seconds within the round (the two timed
        back to back, so a slow spell of the machine between rounds cancels out)."""
        return statistics.median(b / q for b, q in zip(self.busy, self.quiet))

    @property
    def ratio_of_medians(self) -> float:
        return statistics.median(self.busy) / statistics.median(self.quiet)

    def describe(self) -> str:
        q, b = self.quiet, self.busy
        return (f"quiet {statistics.median(q):.3f} s [{min(q):.3f}-{max(q):.3f}], busy "
                f"{statistics.median(b):.3f} s [{min(b):.3f}-{max(b):.3f}], ratio {self.ratio:.2f}x "
                f"(paired; of medians {self.ratio_of_medians:.2f}x)")


def time_busy(workers: dict[str, Worker], burners: int = 2, rounds: int = 5,
              units: int = 2) -> dict[str, BusyTiming]:
    """Each worker's workload (`units` units per timing), quiet and with `burners` background
    processes, `rounds` rounds: in each round every worker is timed once quiet and once busy, the
    workers in a rotated order, quiet first in even rounds and busy first in odd ones."""
    from course_lib.timing import busy_cores     # (imports torch: not before the workers' env is set)

    out = {name: BusyTiming() for name in workers}
    names = list(workers)
    for r in range(rounds):
        for load in ((0, burners) if r % 2 == 0 else (burners, 0)):
            with busy_cores(load):
                for i in range(len(names)):
                    name = names[(i + r) % len(names)]
                    (out[name].busy if load else out[name].quiet).append(workers[name].time(units))
    return out


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", choices=["torch", "python"], help=argparse.SUPPRESS)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--units", type=int, default=1, help="workload units per timing")
    parser.add_argument("--no-default", action="store_true", help="skip the no-policy worker (slow on a busy machine)")
    args = parser.parse_args(argv)
    if args.serve:
        _serve(args.serve)
        return 0
    settings = {f"policy ({threads_for(1)} threads, passive)": policy_env(1),
                "policy, 1 thread (a lesson's limit_threads(1))": thread_env(1),
                "no policy (torch defaults)": default_env()}
    if args.no_default:
        settings.pop("no policy (torch defaults)")
    workers = {}
    try:
        for name, env in settings.items():
            workers[name] = Worker(env)
        workers["reference: 1-thread pure Python (fair share)"] = Worker(thread_env(1), kind="python")
        for name, timing in time_busy(workers, args.burners, args.rounds, args.units).items():
            print(f"{name:48s} {timing.describe()}")
    finally:
        for worker in workers.values():
            worker.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
