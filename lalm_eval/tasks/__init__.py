"""Tasks in lm-evaluation-harness's YAML schema: configs, safe loading, the index of names.

>>> tm = TaskManager(include_paths=["my_tasks/"])
>>> tm.resolve(["palm"])            # groups and tags → task names
>>> task = tm.load_task("palm_recognition")
>>> task.messages(doc), task.audio_of(doc), task.render_target(doc), task.task_hash
"""

from lalm_eval.tasks.config import GroupConfig, TaskConfig
from lalm_eval.tasks.loader import FunctionRef, TaskYamlLoader, load_yaml
from lalm_eval.tasks.registry import TaskManager, UnknownTaskError
from lalm_eval.tasks.task import Task

__all__ = [
    "FunctionRef",
    "GroupConfig",
    "Task",
    "TaskConfig",
    "TaskManager",
    "TaskYamlLoader",
    "UnknownTaskError",
    "load_yaml",
]
