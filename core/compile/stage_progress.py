"""One progress bar over several stages: each stage reports 0..1 of its own share."""

from __future__ import annotations


class StageProgress:
    """Maps per-stage progress onto one 0..1 bar: progress(fraction, message)."""

    def __init__(self, progress, weights: dict[str, float]):
        self.progress = progress
        total = sum(weights.values())
        self.spans, acc = {}, 0.0
        for name, w in weights.items():
            self.spans[name] = (acc / total, w / total)
            acc += w

    def stage(self, name: str):
        start, width = self.spans[name]

        def report(fraction: float, message: str = "") -> None:
            if self.progress is not None:
                self.progress(start + width * min(max(fraction, 0.0), 1.0), f"{name}: {message}" if message else name)

        report(0.0)
        return report
