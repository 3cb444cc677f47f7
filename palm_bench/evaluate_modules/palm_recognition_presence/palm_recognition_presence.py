"""Mean PALM-Bench recognition-presence score, as a local ``evaluate`` metric.

Wraps palm_bench.recognition.recognition_presence_score(question, reference, response),
imported when computing.
"""

import datasets
import evaluate

_INPUTS = """
Args:
    predictions: list of str, model responses.
    references: list of str, one reference answer per response.
    questions: list of str, the question each response answers.
Returns:
    recognition_presence: mean per-item score (0.0 for no items).
"""


class PalmRecognitionPresence(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__,
            citation="PALM-Bench",
            inputs_description=_INPUTS,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("string"),
                    "references": datasets.Value("string"),
                    "questions": datasets.Value("string"),
                }
            ),
        )

    def _compute(self, predictions, references, questions):
        from palm_bench.recognition import recognition_presence_score

        scores = [float(recognition_presence_score(q, r, p)) for q, r, p in zip(questions, references, predictions)]
        return {"recognition_presence": sum(scores) / len(scores) if scores else 0.0}
