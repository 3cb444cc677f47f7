"""Per-speaker prompt tuning (PALM §5.2): each subject has its own N learned input embeddings.

Where a subject's tokens enter the prompt (training and evaluation alike): **right after every
mention of the subject's name** in the text parts of the request's messages, N placeholder tokens
are inserted; the subjects are the request's ``subjects`` (the task's ``doc_to_subjects``, PALM:
the queried names), matched as whole words (Latin script) or as substrings (Chinese), longest
name first. The placeholder is the tokenizer's pad token, which a rendered prompt never contains
(checked). After the chat template and the processor have built the inputs, a forward hook on
the model's input-embedding layer replaces the embeddings at the placeholder positions of the
prompt (attention mask 1) with the subject's learned vectors, in mention order. The hook runs
inside the model's forward, before Qwen2-Audio / the Omni thinker scatter the audio features
into the ``<|AUDIO|>`` positions; the placeholder positions are not audio positions, so the merge
keeps them (unlike peft's prompt tuning, which prepends to ``inputs_embeds`` and may bypass the
merge: docs/model_internals.md). Decoding steps (one new token) are left alone.

Only the soft prompts train; every model weight stays frozen. Saved one file per subject,
``soft_prompts/<name>.safetensors`` (tensor ``embeddings``, N × hidden size; a name that is not a
plain file name gets ``subject_<sha256[:12]>``), and ``soft_prompts/index.json`` (tokens, hidden
size, the rule above, subject → file). Random initialisation: normal with the std of the input
embedding matrix × ``init_scale``, seeded per (seed, subject).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
from pathlib import Path

from lalm_eval.api import Request
from lalm_eval.errors import ConfigError
from lalm_eval.seeding import stable_int

FOLDER = "soft_prompts"
INDEX = "index.json"
RULE = "after_each_mention"
_SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _file_name(name: str) -> str:
    return (
        f"{name}.safetensors"
        if _SAFE.match(name)
        else f"subject_{hashlib.sha256(name.encode()).hexdigest()[:12]}.safetensors"
    )


def _pattern(name: str) -> str:
    escaped = re.escape(name)
    return rf"(?<!\w){escaped}(?!\w)" if name.isascii() else escaped


def soft_prompt_folder(path) -> Path:
    """``path`` or its ``soft_prompts/`` subfolder, whichever holds ``index.json``."""
    path = Path(path).expanduser()
    for folder in (path, path / FOLDER):
        if (folder / INDEX).is_file():
            return folder
    raise ConfigError(
        f"soft_prompts={path}: no {INDEX} there or in {path / FOLDER} (write one with "
        f"`lalm-eval train --recipe prompt_tuning`)"
    )


def fingerprint_folder(path) -> str:
    """sha256 of a soft-prompt folder's index and every file it lists."""
    folder = soft_prompt_folder(path)
    index = json.loads((folder / INDEX).read_text(encoding="utf-8"))
    h = hashlib.sha256((folder / INDEX).read_bytes())
    for name in sorted(index["subjects"]):
        h.update(name.encode() + b"\0" + (folder / index["subjects"][name]).read_bytes())
    return h.hexdigest()


class SoftPrompts:
    """The learned vectors of each subject, and the hook that splices them into a model's inputs."""

    def __init__(self, vectors: dict, placeholder: str, placeholder_id: int):
        import torch

        self.names = sorted(vectors)
        self.params = torch.nn.ParameterList([torch.nn.Parameter(vectors[n]) for n in self.names])
        self.by_name = dict(zip(self.names, self.params))
        self.tokens = int(next(iter(vectors.values())).shape[0]) if vectors else 0
        self.placeholder, self.placeholder_id = placeholder, int(placeholder_id)
        self._plan = None
        self._hooked: set[int] = set()

    # -- construction ---------------------------------------------------------------------------

    @staticmethod
    def placeholder_of(tokenizer) -> tuple[str, int]:
        if tokenizer.pad_token is None:
            raise ConfigError("per-speaker soft prompts need a pad token (their placeholder); the tokenizer has none")
        return tokenizer.pad_token, tokenizer.pad_token_id

    @classmethod
    def initialise(cls, names, tokens: int, model, tokenizer, seed: int = 0, init_scale: float = 1.0):
        import torch

        weight = model.get_input_embeddings().weight
        std = float(weight.detach().float().std()) * float(init_scale)
        vectors = {}
        for name in sorted(set(names)):
            gen = torch.Generator().manual_seed(stable_int(seed, "soft_prompt", name))
            vectors[name] = torch.randn(tokens, weight.shape[1], generator=gen) * std
        return cls(vectors, *cls.placeholder_of(tokenizer))

    @classmethod
    def load(cls, path, tokenizer) -> SoftPrompts:
        import torch
        from safetensors.torch import load_file

        folder = soft_prompt_folder(path)
        index = json.loads((folder / INDEX).read_text(encoding="utf-8"))
        if index.get("rule") != RULE:
            raise ConfigError(f"{folder / INDEX}: rule {index.get('rule')!r}; this version applies {RULE!r}")
        vectors = {}
        for name, file in index["subjects"].items():
            if not (folder / file).is_file():
                raise ConfigError(f"{folder / INDEX}: subject {name!r}: file {file} is missing")
            vectors[name] = load_file(folder / file)["embeddings"].to(torch.float32)
            if tuple(vectors[name].shape) != (index["tokens"], index["hidden_size"]):
                raise ConfigError(
                    f"{folder / file}: shape {tuple(vectors[name].shape)}, index says "
                    f"({index['tokens']}, {index['hidden_size']})"
                )
        return cls(vectors, *cls.placeholder_of(tokenizer))

    def save(self, out_dir) -> Path:
        from safetensors.torch import save_file

        folder = Path(out_dir) / FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        files = {}
        for name, param in self.by_name.items():
            files[name] = _file_name(name)
            save_file(
                {"embeddings": param.detach().float().cpu().contiguous()},
                folder / files[name],
                metadata={"subject": name, "tokens": str(self.tokens)},
            )
        hidden = int(self.params[0].shape[1]) if self.names else 0
        index = {
            "tokens": self.tokens,
            "hidden_size": hidden,
            "rule": RULE,
            "placeholder": self.placeholder,
            "subjects": files,
        }
        (folder / INDEX).write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return folder

    # -- where the tokens go --------------------------------------------------------------------

    def check(self, requests) -> None:
        """A :class:`ConfigError` naming every subject of ``requests`` without learned tokens here."""
        missing = sorted({n for r in requests for n in r.subjects if n not in self.by_name})
        if missing:
            docs = sorted({f"{r.task} doc {r.doc_id}" for r in requests if set(r.subjects) & set(missing)})
            raise ConfigError(
                f"soft prompts: no learned tokens for subject(s) {missing} (named in {len(docs)} "
                f"request(s), e.g. {docs[:3]}); the folder has {self.names}"
            )

    def mentions(self, request: Request) -> list[str]:
        """The subjects of ``request`` in the order their names occur in its text parts."""
        missing = [n for n in request.subjects if n not in self.by_name]
        if missing:
            raise ConfigError(
                f"soft prompts: no learned tokens for subject(s) {missing} named in task "
                f"{request.task!r} doc {request.doc_id}; the folder has {self.names}"
            )
        if not request.subjects:
            return []
        names = sorted(set(request.subjects), key=len, reverse=True)
        regex = re.compile("|".join(f"(?P<s{i}>{_pattern(n)})" for i, n in enumerate(names)))
        found = []
        for text in self._texts(request):
            found += [names[int(m.lastgroup[1:])] for m in regex.finditer(text)]
        return found

    def mark(self, request: Request) -> Request:
        """``request`` with N placeholders after each mention of each of its subjects."""
        if not request.subjects:
            return request
        names = sorted(set(request.subjects), key=len, reverse=True)
        regex = re.compile("|".join(_pattern(n) for n in names))
        fill = self.placeholder * self.tokens

        def edit(text: str) -> str:
            if self.placeholder in text:
                raise ConfigError(
                    f"task {request.task!r} doc {request.doc_id}: the prompt already contains the soft "
                    f"prompt placeholder {self.placeholder!r}"
                )
            return regex.sub(lambda m: m.group(0) + fill, text)

        messages = []
        for m in request.messages:
            content = m.get("content")
            if isinstance(content, str):
                messages.append({**m, "content": edit(content)})
            elif isinstance(content, (list, tuple)):
                messages.append(
                    {
                        **m,
                        "content": [{**p, "text": edit(p["text"])} if p.get("type") == "text" else p for p in content],
                    }
                )
            else:
                messages.append(m)
        return dataclasses.replace(request, messages=tuple(messages))

    @staticmethod
    def _texts(request: Request):
        for m in request.messages:
            content = m.get("content")
            if isinstance(content, str):
                yield content
            elif isinstance(content, (list, tuple)):
                yield from (p["text"] for p in content if p.get("type") == "text")

    # -- splicing -------------------------------------------------------------------------------

    def attach(self, model) -> None:
        """Register the splice hook on ``model``'s input embedding layer (once per model)."""
        embed = model.get_input_embeddings()
        if id(embed) not in self._hooked:
            embed.register_forward_hook(self._hook)
            self._hooked.add(id(embed))

    @contextlib.contextmanager
    def applied(self, input_ids, attention_mask, mentions: list[list[str]]):
        """Within the block, a forward of the hooked model on exactly ``input_ids`` gets the soft
        vectors at the placeholder positions (the prompt's, attention mask 1)."""
        import torch

        positions = (input_ids == self.placeholder_id) & attention_mask.bool()
        flat = [self.by_name[n] for row in mentions for n in row]
        vectors = torch.cat(list(flat)) if flat else None
        want = self.tokens * len(flat)
        if int(positions.sum()) != want:
            raise ConfigError(
                f"soft prompts: {int(positions.sum())} placeholder positions in the inputs for "
                f"{len(flat)} mentions x {self.tokens} tokens (did the tokenizer split the placeholder "
                f"{self.placeholder!r}?)"
            )
        self._plan = (input_ids, positions, vectors) if want else None
        try:
            yield
        finally:
            self._plan = None

    def _hook(self, module, args, output):
        if self._plan is None or not args:
            return None
        ids, positions, vectors = self._plan
        if args[0].shape != ids.shape or not bool((args[0] == ids.to(args[0].device)).all()):
            return None  # a decoding step, or another input
        out = output.clone()
        out[positions.to(out.device)] = vectors.to(out.device, out.dtype)
        return out


class SoftPromptModel:
    """Factory of the ``torch.nn.Module`` that ``Trainer`` trains: the frozen model + the soft prompts."""

    def __new__(cls, model, soft: SoftPrompts):
        import torch

        class _Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model, self.soft_params = model, soft.params
                self.soft = soft
                soft.attach(model)

            @property
            def config(self):
                return self.model.config

            def gradient_checkpointing_enable(self, **kwargs):
                self.model.gradient_checkpointing_enable(**kwargs)
                self.model.enable_input_require_grads()

            def forward(self, input_ids, attention_mask, soft_prompt_mentions=None, **kwargs):
                with self.soft.applied(input_ids, attention_mask, soft_prompt_mentions or [[]] * len(input_ids)):
                    return self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)

        return _Wrapped()
