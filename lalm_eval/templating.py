"""The one Jinja2 environment of the prompt and description templates (judges, the builders' LLM
prompts, PALM's acoustic descriptions): files of one folder, a missing variable an error
(``StrictUndefined``), block tags on lines of their own (``trim_blocks`` / ``lstrip_blocks``), no
HTML escaping. One environment per folder and options, made once, so a template is parsed once.
"""

from __future__ import annotations

import os
from functools import cache


def jinja_env(folder: str | os.PathLike, *, keep_trailing_newline: bool = False, block_lines: bool = True):
    """The environment of the templates in ``folder``. ``block_lines``: ``trim_blocks`` and
    ``lstrip_blocks`` (a ``{% … %}`` line leaves no blank line behind); ``keep_trailing_newline``:
    the template's last newline kept in the text."""
    return _environment(os.fspath(folder), keep_trailing_newline, block_lines)


@cache
def _environment(folder: str, keep_trailing_newline: bool, block_lines: bool):
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        trim_blocks=block_lines,
        lstrip_blocks=block_lines,
        keep_trailing_newline=keep_trailing_newline,
        autoescape=False,
    )
