"""The gradebook's picture: one histogram of score / max per lesson, side by side in one PNG, with
how many files were graded and not and the mean; for the instructor's first look at a class."""
from __future__ import annotations

from pathlib import Path

from .lessons import lesson_title


def histograms(rows: list[dict], lessons: list[str], maxima: dict, png: Path) -> Path:
    """One histogram of score / max per lesson, side by side in one PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = lessons or [""]
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.5), squeeze=False)
    for ax, lesson in zip(axes[0], panels):
        graded = [r for r in rows if r["lesson"] == lesson and not r["error"] and r["max"]]
        fractions = [int(r["score"]) / int(r["max"]) for r in graded]
        ax.hist(fractions, bins=[i / 10 for i in range(11)], edgecolor="black")
        ax.set_xlim(0, 1)
        ax.set_xlabel("score / max")
        ax.set_ylabel("submissions")
        others = sum(1 for r in rows if r["lesson"] == lesson and r["error"]) if lesson else len(rows)
        mean = sum(fractions) / len(fractions) if fractions else float("nan")
        title = f"lesson {lesson_title(lesson)}" if lesson else "nothing graded"
        ax.set_title(f"{title}\n{len(graded)} graded, {others} not; mean {mean:.2f}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return png
