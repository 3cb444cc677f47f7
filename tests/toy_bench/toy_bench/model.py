"""A stand-in model: answers every request "I hear <answer>." (model arg answer, default Alice)."""

from lalm_eval.api import Adapter, Response


class EchoAdapter(Adapter):
    name = "toy_echo"

    def __init__(self, answer: str = "Alice"):
        super().__init__()
        self.answer = answer

    def identity(self) -> dict:
        return {"name": self.name, "answer": self.answer}

    def generate(self, requests, batch_size=1):
        self.n_generated += len(requests)
        return [Response(f"I hear {self.answer}.") for _ in requests]
