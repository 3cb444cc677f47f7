"""A toy third benchmark: who speaks in a few clips of PALM-Bench's embedded corpus, and what they
say. It lives outside lalm_eval and reaches it only through entry points (the dist-info beside this
package): its task folder (``TASKS``), its metric, its judge and a stand-in model."""

from pathlib import Path

TASKS = Path(__file__).resolve().parent / "tasks"
CARDS = Path(__file__).resolve().parent / "cards"
