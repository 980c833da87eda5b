"""The kernel watch: which ATen operators the learner's code ran during a graded call (a trip-wire).

Torch's profiler over every thread sees each operator the dispatcher runs, composite ones included,
whatever Python name reached it (torch.X, F.X, torch._C._nn.X, torch.ops.aten.X.overload, a Tensor
method, a dict of them, a worker thread). An operator of a forbidden built-in's kernel family
(shortcuts.KERNELS) fails the item. Only the learner's code runs in the learner's process (the
checks' reference computations run in the grader's), so whatever it dispatches during a graded
call is the learner's.
"""
import secrets

SWITCHED_OFF = "torch's profiler, stopped or restarted (it switched off the grader's kernel checks)"


class KernelWatch:
    """The ATen operators the dispatcher runs, in every thread, between start() and stop(): torch's
    profiler (RecordFunction at the dispatcher, so composite operators such as aten::rms_norm count
    too, whatever Python name or thread reached them). `kernels`: {"op": label}, as shortcuts.kernels_for
    gives it. stop() returns the labels of the operators seen, and says so when the profiler was
    stopped or restarted in between (the learner's code switched the watch off)."""

    def __init__(self, kernels: dict[str, str], exempt: str | None = None):
        self.kernels = {name if name.startswith("aten::") else f"aten::{name}": label
                        for name, label in kernels.items()}
        self.exempt = exempt     # operators inside a record_function range of this name do not count
        self.marker = f"course-grader-{secrets.token_hex(8)}"
        self.started = False

    def _config(self):
        from torch._C._profiler import ProfilerActivity, ProfilerConfig, ProfilerState, _ExperimentalConfig
        config = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False,
                                _ExperimentalConfig(profile_all_threads=True))
        return config, {ProfilerActivity.CPU}

    def _mark(self, suffix: str) -> None:
        import torch
        with torch.autograd.profiler.record_function(self.marker + suffix):
            pass

    def start(self) -> None:
        from torch.autograd import _disable_profiler, _enable_profiler, _prepare_profiler
        config, activities = self._config()
        _prepare_profiler(config, activities)
        try:
            _enable_profiler(config, activities)
        except RuntimeError:       # a learner's own profiler left running: it ends here
            _disable_profiler()
            _prepare_profiler(config, activities)
            _enable_profiler(config, activities)
        self.started = True
        self._mark(":start")

    def stop(self) -> list[str]:
        from torch.autograd import _disable_profiler
        if not self.started:
            return []
        self.started = False
        try:
            self._mark(":stop")
            events = _disable_profiler().events()
            names = {event.name() for event in events}
        except Exception:  # noqa: BLE001 - no profiler to stop: the learner's code stopped it
            return [SWITCHED_OFF]
        if self.marker + ":start" not in names or self.marker + ":stop" not in names:
            return [SWITCHED_OFF]
        if names & self.kernels.keys() and self.exempt in names:
            ranges = [(e.start_thread_id(), e.start_ns(), e.end_ns()) for e in events if e.name() == self.exempt]
            names = {e.name() for e in events if e.name() in self.kernels and not any(
                thread == e.start_thread_id() and start <= e.start_ns() <= end for thread, start, end in ranges)}
        out: dict[str, str] = {}    # one operator per forbidden object: its family's first that ran
        for name, label in self.kernels.items():
            if name in names:
                out.setdefault(label.rpartition(" (the kernel of ")[2] or label, label)
        return sorted(out.values())
