"""Fine-tuning of PALM §5.2 over harness tasks: ``lalm-eval train`` (see ``cli.py``).

``recipes.py`` (recipe YAML → peft config / placement), ``data.py`` (training examples from the
tasks' own prompts, audio and targets), ``soft_prompts.py`` (per-speaker prompt tuning),
``trainer.py`` (transformers ``Trainer``), ``cli.py``.
"""
