"""A rule-based stand-in for an LLM judge behind an OpenAI-compatible endpoint, so that the report
layouts that need judge data (LLM-judge score columns, MSU Tables 4/6) can be shown from a real
model run without a judge model. It is NOT a judge: its scores are token overlap, its error types
a fixed rule. The README's report-layout example was measured with it and says so.

    python tests/report_standin_judge.py 8765 &
    lalm-eval ... --judge openai:model=standin,base_url=http://127.0.0.1:8765/v1

Replies, by the prompt it receives (palm_bench/judges/prompts/*.j2, msu_bench/judges/prompts/*.j2):
- MSU error classifier: "rejection" for an empty response, "answer_extraction" for one of at most
  three words, otherwise "perceptual".
- MSU judge: one sub-question scored 1 / 0.5 / 0 at token F1 ≥ 0.5 / ≥ 0.2 / below, overall = it.
- PALM judges: {"score": the same 1 / 0.5 / 0}.
"""

from __future__ import annotations

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ITEM = re.compile(r"question: “(?P<q>.*?)”\s*\n• ground_truth: “(?P<ref>.*?)”\s*\n• response: “(?P<resp>.*?)”", re.S)


def _f1(a: str, b: str) -> float:
    x, y = re.findall(r"\w+", a.lower()), re.findall(r"\w+", b.lower())
    common = sum(min(x.count(t), y.count(t)) for t in set(x))
    if not x or not y or not common:
        return 0.0
    p, r = common / len(x), common / len(y)
    return 2 * p * r / (p + r)


def reply_for(prompt: str) -> dict:
    found = list(_ITEM.finditer(prompt))  # the item under review comes last, after the examples
    m = found[-1] if found else None
    ref, resp = (m.group("ref"), m.group("resp")) if m else ("", "")
    f1 = _f1(resp, ref)
    score = 1.0 if f1 >= 0.5 else 0.5 if f1 >= 0.2 else 0.0
    if '"error_type"' in prompt:
        words = len(resp.split())
        kind = "rejection" if not resp.strip() else "answer_extraction" if words <= 3 else "perceptual"
        return {"error_type": kind, "comment": "stand-in rule"}
    if '"sub_questions"' in prompt:
        return {
            "question_type": "single",
            "sub_questions": [{"question": "q", "score": score}],
            "relevance": 5,
            "accuracy": int(5 * score),
            "causal_question": False,
            "causal_soundness": 5,
            "overall": score,
            "comment": "stand-in: token overlap",
        }
    return {"score": score, "comment": "stand-in: token overlap"}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        prompt = "\n".join(
            m["content"]
            if isinstance(m.get("content"), str)
            else " ".join(p.get("text", "") for p in m.get("content") or [])
            for m in body.get("messages", [])
        )
        text = json.dumps(reply_for(prompt))
        out = json.dumps(
            {
                "id": "standin",
                "object": "chat.completion",
                "created": 0,
                "model": "standin",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):  # quiet
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8765), _Handler).serve_forever()
