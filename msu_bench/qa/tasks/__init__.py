"""The template QA generators of the 25 MSU-Bench tasks, one module per tier; importing this
package registers them all (:mod:`msu_bench.qa.tasks.registry`)."""

from msu_bench.qa.tasks import tier1, tier2, tier3, tier4  # noqa: F401  (each registers its tasks)
from msu_bench.qa.tasks.registry import GENERATORS, Candidate, Wording, generator, generator_for

__all__ = ["GENERATORS", "Candidate", "Wording", "generator", "generator_for"]
