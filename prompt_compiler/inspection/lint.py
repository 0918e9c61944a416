"""Lint: what compiles but is probably wrong, found before any GPU time is spent.

Each :class:`Finding` has a stable ``code``:

``unknown-placeholder``
    A ``{name}`` in a template that matches no column (it stays in the prompt verbatim).
``special-token-in-data``
    A model's special token (from its meta or chat template, or its tokenizer's special
    added tokens) inside a dataset value; with a ``tokenizer``, the message says whether
    that text really becomes the control token's id with this tokenizer.
``template-syntax-in-data``
    ``{column}`` or the ice token inside a dataset value: OpenCompass's compat mode fills
    placeholders one column at a time over text that already holds values, so such a
    value is rewritten there.
``empty-prompt``
    A compiled prompt with no text at all.
``empty-test-split``
    A dataset with no test rows (it compiles to nothing).
``shot-leak``
    An in-context example whose input columns equal the test row's.
``system-dropped``
    The prompt has a system message that the model's template drops or merges into a
    user turn (see :mod:`prompt_compiler.model.system_role`).
``default-system``
    The prompt has a system message and the model's built-in meta template writes the
    family's default system turn (``qwen2.5-instruct``): says whether this run replaced the
    default (default mode, as the family's chat template does) or kept both turns (compat
    mode, as OpenCompass does; defect D24).
``double-bos``
    With a ``tokenizer``: OpenCompass feeds the prompt more than one BOS (a meta template
    writes one and the tokenizer adds another, defect D21); the default mode feeds one.
    Reported once per dataset and model, at the first such row.
``missing-bos``
    With a ``tokenizer`` that has a BOS: OpenCompass feeds the prompt without it (a chat
    template that writes none, a ``bos_token`` the post-processor does not add; D21).
``eos-in-prompt``
    With a ``tokenizer``: a generation prompt's ids end with the tokenizer's EOS, so the
    model reads the text as finished before it answers.
``unused-template-kwarg``
    A model's ``chat_template_kwargs`` names a variable its chat template never reads
    (a typo such as ``enable_thinkng``, or a switch of another model family), so it
    changes nothing. Reported once per model (``dataset`` is ``None``).

Findings are warnings: the compile itself still succeeds. Model-independent findings
carry ``model=None``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..compiler import Compiler
from ..config.origins import is_under, named_at
from ..model.data_tokens import UnsplitWarning
from ..model.special_tokens import model_special_tokens
from ..model.system_role import has_system, merge_cause, system_handling
from ..template.placeholders import unknown_placeholders

__all__ = ["CODES", "COMPILE_WARNS", "Finding", "lint_suite"]

CODES = ("unknown-placeholder", "special-token-in-data", "template-syntax-in-data",
         "empty-prompt", "empty-test-split", "shot-leak", "system-dropped",
         "default-system", "unused-template-kwarg", "double-bos", "missing-bos", "eos-in-prompt")

COMPILE_WARNS = frozenset({"unknown-placeholder", "empty-test-split"})
"""Codes whose finding the compile itself warns about (``pairs.dataset_warnings``):
``--check`` compiles, then lints, and prints each of these once, as the compile's warning."""

_NO_MODEL = {"abbr": "(no model)", "renderer": "lm", "meta_template": None}


@dataclass(frozen=True, slots=True)
class Finding:
    """One lint finding: a stable code, a message, and where."""

    code: str
    """One of :data:`CODES`."""
    message: str
    config_path: str | None = None
    dataset: str | None = None
    model: str | None = None
    """``None`` when the finding does not depend on the model."""
    key_path: str | None = None
    row: int | None = None
    """The test row's index (as in the records), when one row is concerned."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``lint --json`` prints."""
        return asdict(self)

    def __str__(self) -> str:
        where = [f"dataset {self.dataset!r}"] if self.dataset else []
        if self.model:
            where.append(f"model {self.model!r}")
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.key_path:
            where.append(f"at {self.key_path}")
        prefix = f"{self.config_path}: " if self.config_path else ""
        return f"{prefix}{', '.join(where)}: {self.code}: {self.message}"


def _values(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string inside a row value, with its key path."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _values(v, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _values(v, f"{path}[{i}]")


def _row_strings(row: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, str, str]]:
    """``(column, key path, text)`` of a row's string values (the reader's own columns skipped)."""
    for col, value in row.items():
        if col in ("subdivision", "idx"):
            continue
        for path, text in _values(value, f"{prefix}.{col}"):
            yield col, path, text


def _prompt_is_empty(prompt: Any) -> bool:
    if isinstance(prompt, str):
        return not prompt.strip()
    if isinstance(prompt, list):
        texts = [m.get("content", m.get("prompt")) if isinstance(m, Mapping) else m for m in prompt]
        return all(not (t.strip() if isinstance(t, str) else t) for t in texts)
    return False


class _DatasetLint:
    """The checks of one dataset (for every model of the suite)."""

    def __init__(self, pair_dataset: Any, spec: Mapping[str, Any], models: Sequence[Any],
                 options: Mapping[str, Any], compiler: Compiler) -> None:
        self.ds = pair_dataset
        self.spec = spec
        self.models = models
        self.options = options
        self.compiler = compiler
        self.findings: list[Finding] = []
        self.config_path, self.prefix = named_at(pair_dataset)  # where it is defined

    def add(self, code: str, message: str, *, model: str | None = None,
            key_path: str | None = None, row: int | None = None,
            rows: Sequence[Any] | None = None, position: int | None = None) -> None:
        """A finding; one about a value of ``rows[position]`` read from a JSON Lines file
        names that file and line (``key_path`` then starts with ``test[i]``/``train[i]``)."""
        origin = _origin(rows, position) if rows is not None and position is not None else None
        if origin is not None and key_path is not None:
            file, line = origin
            column = key_path.split(".", 1)[1] if "." in key_path else key_path
            self.findings.append(Finding(code, message, file, self.ds.abbr, model,
                                         f"line {line}, {column}", row))
            return
        path = f"{self.prefix}.{key_path}" if self.prefix and key_path else key_path
        self.findings.append(Finding(code, message, self.config_path, self.ds.abbr, model,
                                     path, row))

    def run(self) -> list[Finding]:
        first = True
        for model in self.models or [None]:
            spec = model.model_dict() if model is not None else _NO_MODEL
            job, kind, params = self.compiler.job(
                self.spec, spec, self.options,
                opencompass_root=getattr(self.ds, "opencompass_root", None))
            if first:
                if not job.rows.test:
                    self.add("empty-test-split", "the test split has no rows, so the dataset "
                             "compiles to no prompt", key_path="reader_cfg.test_split")
                    return self.findings
                self._placeholders(job)
            with warnings.catch_warnings():  # reported as special-token-in-data
                warnings.simplefilter("ignore", UnsplitWarning)
                records = list(self.compiler.job_records(job, kind, params))
            used = sorted({i for r in records for i in r.retrieved_ids})
            if first:
                self._template_syntax(job, used)
                self._leaks(job, records)
                first = False
            if model is not None:
                self._model_checks(job, records, used)
        return self.findings

    # -- model-independent ----------------------------------------------------------

    def _placeholders(self, job: Any) -> None:
        infer = self.spec.get("infer_cfg", {})
        test_cols = list(job.rows.test[0])
        train_cols = list(job.rows.train[0]) if job.rows.train else test_cols
        for key, cols in (("ice_template", train_cols), ("prompt_template", test_cols)):
            for found in unknown_placeholders(infer.get(key), cols, f"infer_cfg.{key}"):
                self.add("unknown-placeholder", found.message, key_path=found.key_path)

    def _template_syntax(self, job: Any, used: Sequence[int]) -> None:
        tokens = {t for t in (getattr(job.prompt_template, "ice_token", None),
                              getattr(job.ice_template, "ice_token", None)) if t}
        cols = [c for c in job.rows.test[0] if c not in ("subdivision", "idx")]
        for n, row in enumerate(job.rows.test):
            order = list(row)
            for col, path, text in _row_strings(row, f"test[{row.get('idx', n)}]"):
                later = order[order.index(col) + 1:]
                hit = next((f"{{{c}}}" for c in later if f"{{{c}}}" in text), None)
                why = "compat mode fills it with that column's value when the row is formatted"
                if hit is None:
                    hit = next((t for t in tokens if t in text), None)
                    why = "the ice token marks where in-context examples go"
                if hit is not None:
                    self.add("template-syntax-in-data", f"value contains {hit!r}: {why}",
                             key_path=path, row=n, rows=job.rows.test, position=n)
        for i in used:
            row = job.rows.train[i]
            for _col, path, text in _row_strings(row, f"train[{row.get('idx', i)}]"):
                hit = next((f"{{{c}}}" for c in cols if f"{{{c}}}" in text), None)
                if hit is None:
                    hit = next((t for t in tokens if t in text), None)
                if hit is not None:
                    self.add("template-syntax-in-data",
                             f"in-context example value contains {hit!r}: compat mode inserts "
                             "examples before formatting, so it is filled with the test row's "
                             "value", key_path=path, rows=job.rows.train, position=i)

    def _leaks(self, job: Any, records: Sequence[Any]) -> None:
        cols = job.reader.input_columns
        seen: set[tuple[int, int]] = set()
        for rec in records:
            test = job.rows.test[rec.index]
            for i in rec.retrieved_ids:
                if (rec.index, i) in seen:
                    continue
                seen.add((rec.index, i))
                train = job.rows.train[i]
                if cols and all(train.get(c) == test.get(c) for c in cols):
                    self.add("shot-leak", f"in-context example (training row {i}) has the same "
                             f"input ({', '.join(cols)}) as the test row",
                             key_path="infer_cfg.retriever", row=rec.index)

    # -- per model ------------------------------------------------------------------

    def _model_checks(self, job: Any, records: Sequence[Any], used: Sequence[int]) -> None:
        model = job.model
        tokenizer = _tokenizer(model)
        tokens = model_special_tokens(model.meta.raw if model.meta else None, model.chat_template)
        if tokenizer is not None:
            tokens = tuple(sorted({*tokens, *_special_added(tokenizer)},
                                  key=lambda t: (-len(t), t)))
        if tokens:
            pattern = re.compile("|".join(re.escape(t) for t in tokens))
            rows: list[tuple[str, Mapping[str, Any], int | None, Sequence[Any], int]] = [
                (f"test[{r.get('idx', n)}]", r, n, job.rows.test, n)
                for n, r in enumerate(job.rows.test)]
            if job.rows.train is not job.rows.test:
                rows += [(f"train[{job.rows.train[i].get('idx', i)}]", job.rows.train[i], None,
                          job.rows.train, i) for i in used]
            for prefix, row, n, split, position in rows:
                for _col, path, text in _row_strings(row, prefix):
                    m = pattern.search(text)
                    if m:
                        self.add("special-token-in-data",
                                 f"value contains {m.group()!r}, a special token of this model: "
                                 + _becomes(tokenizer, m.group(), text, model, job.policy),
                                 model=model.abbr, key_path=path, row=n, rows=split,
                                 position=position)
        if tokenizer is not None and model.renderer != "api":
            self._bos_checks(job, records, tokenizer)
        for rec in records:
            if _prompt_is_empty(rec.prompt):
                self.add("empty-prompt", "the compiled prompt has no text", model=model.abbr,
                         key_path="infer_cfg.prompt_template", row=rec.index)
        with_system = next((r for r in records if has_system(r.intermediate)), None)
        if with_system is not None:
            handled = system_handling(model)
            if handled in ("merged", "dropped") and model.system_role is None:
                how = ("drops it" if handled == "dropped"
                       else f"merges it into a user turn ({merge_cause(model)})")
                self.add("system-dropped", f"the prompt has a system message and this model's "
                         f"template {how}; set the model's system_role to say what you want",
                         model=model.abbr, key_path=self._system_source(),
                         row=with_system.index)
            turn = model.meta.default_system if model.meta is not None else None
            if turn is not None and handled == "native":
                self._default_system(turn, with_system, model.abbr)

    def _default_system(self, turn: str, record: Any, model: str) -> None:
        """default-system: what became of the meta template's default system turn."""
        if turn in record.prompt:
            what = ("kept in front of it: the model reads two system turns (compat mode, as "
                    "OpenCompass writes the meta template's begin; D24)")
        else:
            what = ("replaced by it, as the family's chat template does (default mode; compat "
                    "mode keeps both, D24)")
        self.add("default-system", "the prompt starts with its own system message; the meta "
                 f"template's default system turn is {what}", model=model,
                 key_path=self._system_source(), row=record.index)

    def _system_source(self) -> str:
        """The template that holds the system message: the one naming a SYSTEM role, else
        the one the dataset has (prompt_template first)."""
        import json

        infer = self.spec.get("infer_cfg") or {}
        present = [k for k in ("prompt_template", "ice_template") if k in infer]
        for key in present:
            text = json.dumps(infer[key], default=str)
            if '"SYSTEM"' in text or '"system"' in text:
                return f"infer_cfg.{key}"
        return f"infer_cfg.{present[0]}" if present else "infer_cfg"


    def _bos_checks(self, job: Any, records: Sequence[Any], tokenizer: Any) -> None:
        """double-bos, missing-bos, eos-in-prompt: on the ids OpenCompass feeds (compat)."""
        from ..errors import PromptCompilerError
        from ..model.token_ids import RecordIds, lmdeploy_text, model_bos, prompt_ids
        from ..policy import Policy

        model, compat = job.model, Policy.of("opencompass")
        bos, eos = model_bos(tokenizer), tokenizer.eos_id
        texts = RecordIds(job)
        first: dict[str, tuple[Any, int]] = {}
        counts: dict[str, int] = {}
        for rec in records:
            try:
                text = texts.text(rec)
                if job.policy.fixes("D21"):  # a default-mode record: the text as compat hands it
                    text = lmdeploy_text(model, text)
                ids = prompt_ids(model, text, compat)
            except PromptCompilerError:
                continue  # a prompt with no one text (multimodal) has no ids to check
            found = []
            if bos is not None and ids.count(bos) > 1:
                found.append(("double-bos", ids.count(bos)))
            elif bos is not None and ids[:1] != [bos]:
                found.append(("missing-bos", 0))
            if eos is not None and ids and ids[-1] == eos and rec.mode in ("gen", "chat"):
                found.append(("eos-in-prompt", 0))
            for code, n in found:
                counts[code] = counts.get(code, 0) + 1
                first.setdefault(code, (rec, n))
        bos_text = tokenizer.backend.id_to_token(bos) if bos is not None else ""
        for code, (rec, n) in first.items():
            more = counts[code] - 1
            also = f" (and {more} more prompt{'s' if more != 1 else ''})" if more else ""
            if code == "double-bos":
                message = (f"OpenCompass feeds this prompt {n} BOS tokens {bos_text!r}{also}: "
                           "the text already holds one and the tokenizer adds another "
                           "(D21; the default mode feeds one)")
            elif code == "missing-bos":
                message = (f"OpenCompass feeds this prompt without the model's BOS "
                           f"{bos_text!r}{also} (D21; the default mode adds it)")
            else:
                eos_text = tokenizer.backend.id_to_token(eos)
                message = (f"the ids end with the EOS token {eos_text!r}{also}: the model reads "
                           "the text as finished before it answers")
            self.add(code, message, model=model.abbr, key_path="infer_cfg.prompt_template",
                     row=rec.index)


def _origin(rows: Sequence[Any], position: int) -> tuple[str, int] | None:
    """``(file, line)`` of a row read from a JSON Lines file; None for other rows."""
    from ..data.reader import RowView
    from ..data.sources import JsonlRows

    if isinstance(rows, RowView) and isinstance(rows.source, JsonlRows):
        return str(rows.source.file), rows.source._lineno(rows.positions[position])
    return None


def _tokenizer(model: Any) -> Any:
    from ..model.tokenize import HFTokenizer

    counter = model.count_tokens
    return counter if isinstance(counter, HFTokenizer) else None


def _special_added(tokenizer: Any) -> list[str]:
    """The tokenizer's special added tokens (``<|eot_id|>``, ``[SEP]``...)."""
    decoder = tokenizer.backend.get_added_tokens_decoder()
    return [t.content for t in decoder.values() if t.special and t.content.strip()]


def _becomes(tokenizer: Any, token: str, text: str, model: Any, policy: Any) -> str:
    """Whether ``token`` in ``text`` becomes its control token's id with this tokenizer, and
    what this run's mode does with it (D23)."""
    from ..model.data_tokens import for_model

    if tokenizer is None:
        return "the tokenizer may read it as a control token"
    token_id = tokenizer.token_id(token)
    if token_id is not None and token_id in tokenizer.encode(text, special_tokens=False):
        if for_model(model, policy) is not None:
            return (f"the tokenizer reads it as the control token (id {token_id}), as "
                    "OpenCompass feeds it; this run (default mode) encodes it as ordinary "
                    "text, D23 (data_special_tokens: parse keeps the control token)")
        why = ("compat mode, as OpenCompass" if not policy.fixes("D23")
               else "data_special_tokens: parse")
        return (f"with this tokenizer it becomes the control token (id {token_id}), not text "
                f"({why})")
    n = len(tokenizer.encode(token, special_tokens=False))
    return f"with this tokenizer it stays text ({n} ordinary tokens), not the control token"


def lint_suite(suite: Any, *, data_dir: Path | None = None, mode: str = "default",
               only: Iterable[str] = (), models: Iterable[str] = (),
               opencompass_python: Path | None = None, no_rows: bool = False,
               ) -> list[Finding]:
    """Lint every dataset of a loaded :class:`~prompt_compiler.run.suite.Suite` against its models.

    ``opencompass_python``: runs the loader of a class with no native reader
    (``--opencompass-python``). ``no_rows``: stand-in rows where rows would be read
    (``--no-rows``, :mod:`prompt_compiler.data.standin`).

    Raises:
        PromptCompilerError: A config does not compile at all (the same error as compiling).
    """
    import fnmatch

    from ..data.sources import attach_rows
    from ..errors import PromptCompilerError

    globs = list(only)
    compiler = Compiler(mode=mode)
    findings: list[Finding] = []
    pairs = suite.pairs(globs, list(models))
    options = {p.dataset.abbr: p.options for p in pairs}
    paired: dict[str, list[Any]] = {}
    for p in pairs:  # each dataset against the models it is paired with
        paired.setdefault(p.dataset.abbr, []).append(p.model)
    for dataset in suite.datasets:
        if globs and not any(fnmatch.fnmatchcase(dataset.abbr, g) for g in globs):
            continue
        try:
            spec = attach_rows(dataset, data_dir, opencompass_python, no_rows=no_rows).spec
            findings += _DatasetLint(dataset, spec, paired.get(dataset.abbr, []),
                                     options.get(dataset.abbr, dict(suite.options)), compiler).run()
        except PromptCompilerError as err:
            file, key_path = named_at(dataset)  # where it is defined
            if err.key_path and key_path and not is_under(err.key_path, dataset.key_path):
                err.key_path = f"{key_path}.{err.key_path}"
            raise err.located(config_path=file, dataset=dataset.abbr) from None
    used = {p.model.abbr for p in pairs}
    findings += _unread_kwargs([m for m in suite.models if m.abbr in used], compiler)
    return findings


def _unread_kwargs(models: Sequence[Any], compiler: Compiler) -> list[Finding]:
    """``unused-template-kwarg``: chat_template_kwargs the model's chat template never reads."""
    import difflib

    from ..model.chat_controls import template_variables, unread_kwargs

    found = []
    for config in models:
        key = next((k for k in ("chat_template_kwargs", "template_kwargs")
                    if config.spec.get(k)), None)
        if key is None or config.spec.get("chat_template") is None:
            continue
        model = compiler.model(config.model_dict())
        read = sorted(template_variables(model.chat_template))
        for name in unread_kwargs(model.chat_template, model.template_kwargs):
            close = difflib.get_close_matches(name, read, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            file, key_path = named_at(config)
            found.append(Finding(
                "unused-template-kwarg",
                f"the chat template never reads {name!r}, so setting it changes nothing{hint}",
                file, None, config.abbr, f"{key_path}.{key}.{name}"))
    return found
