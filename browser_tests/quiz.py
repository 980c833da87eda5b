"""Answering the Check yourself quiz (course_lib/quiz.js) from a test: one item right, one wrong."""
from __future__ import annotations


def answers(items: list[dict]) -> tuple[dict, dict]:
    """(a numeric item and a right answer, a choice item and a wrong option) from the quiz's items."""
    numeric = next(item for item in items if item["kind"] == "numeric")
    choice = next(item for item in items if item["kind"] == "choice")
    low, high = numeric["accepted"]
    wrong = choice["folklore"] if choice.get("folklore") is not None else (choice["answer"] + 1) % len(choice["options"])
    return {"item": numeric, "answer": f"{(low + high) / 2:.6g}"}, {"item": choice, "option": wrong}


def answer_one_right_one_wrong(quiz, items: list[dict]) -> tuple[str, str]:
    """In the quiz element `quiz` (a Playwright locator), answer the numeric item right and the
    choice item wrong; return the two verdict texts (asserting their data-correct)."""
    right, wrong = answers(items)
    numeric = quiz.locator(f"[data-item='{right['item']['id']}']")
    numeric.locator("input.course-quiz-answer").fill(right["answer"])
    numeric.locator("button").first.click()
    verdict = numeric.locator(".course-quiz-verdict")
    assert verdict.get_attribute("data-correct") == "true", verdict.inner_text()
    choice = quiz.locator(f"[data-item='{wrong['item']['id']}']")
    choice.locator("input[type=radio]").nth(wrong["option"]).check()
    choice.locator("button").first.click()
    verdict_wrong = choice.locator(".course-quiz-verdict")
    assert verdict_wrong.get_attribute("data-correct") == "false", verdict_wrong.inner_text()
    return verdict.inner_text(), verdict_wrong.inner_text()
