"""Dataset rows: where they come from and the file readers.

Rows of a dataset are looked up in this order:

1. inline in the config: ``rows`` (one split used as both train and test) or ``splits``
   (``{split: [row, ...]}``), as in the conformance case format;
2. ``path`` (or ``data_files``) read by a built-in reader: JSONL, JSON (a list of objects,
   or ``{split: [...]}``), CSV, or a Hugging Face dataset saved with ``save_to_disk``
   (needs the ``compile-prompts[hf]`` extra). The reader is the dataset's ``type``
   (``jsonl``, ``json``, ``csv``, ``hf_disk``; OpenCompass's ``JsonlDataset`` and
   ``CustomDataset`` too) or, without a type, the file suffix. A relative path is tried
   against the config file's folder, then the working directory. Any other ``type`` (an
   OpenCompass loader class such as ``GSM8KDataset``) skips this step;
3. ``data_dir``: ``DIR/<abbr>/<split>.jsonl`` (one file per split) or ``DIR/<abbr>.jsonl``
   (one split used as both);
4. an OpenCompass loader class: the rows its ``load()`` returns from OpenCompass's data
   folder, by a native reader or by OpenCompass's own loader in another interpreter
   (:mod:`prompt_compiler.data.opencompass`).

Row key order is kept. Every error names the file, and the line or row when it is about one.
"""

from __future__ import annotations

import json
import os
import stat
import weakref
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from functools import partial
from itertools import accumulate
from pathlib import Path
from typing import Any

import orjson

from .._version import install_hint
from ..config.records import DatasetConfig
from ..errors import DataError, LimitError, PromptCompilerError
from ..safety import limits
from ..safety.values import check_row, describe_load_error
from ..storage import object_uri
from .rows import LazyRows, LoadedRows, Row

__all__ = [
    "BUILTIN_READERS",
    "LoadedRows",
    "chatml_rows",
    "JsonlRows",
    "attach_rows",
    "bridge_calls",
    "load_splits",
    "read_csv",
    "read_hf_disk",
    "read_json",
    "read_jsonl",
]


# reader name -> canonical reader; None = pick by suffix
BUILTIN_READERS: dict[str, str | None] = {
    "jsonl": "jsonl",
    "json": "json",
    "csv": "csv",
    "hf_disk": "hf_disk",
    "parquet": "parquet",
    "JsonlDataset": "jsonl",  # OpenCompass's JSONL loader
    "CustomDataset": None,  # OpenCompass's loader that picks .jsonl / .csv by suffix
    "ChatMLDataset": "chatml",  # OpenCompass's ChatML loader (chatml_datasets): chatml_rows
}
_SUFFIX_READERS = {".jsonl": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
_HF_MARKERS = ("dataset_dict.json", "dataset_info.json", "state.json")




def load_splits(dataset: DatasetConfig, data_dir: Path | None = None,
                opencompass_python: str | os.PathLike[str] | None = None) -> LoadedRows:
    """Find and read the rows of ``dataset`` (see the module docstring for the order).

    ``opencompass_python``: the interpreter that runs an OpenCompass loader class's own
    ``load()`` (:mod:`prompt_compiler.data.opencompass.bridge`; else its environment variable).

    Raises:
        DataError: No rows were found (the message lists every path tried), or a file is
            malformed (file and line named).
    """
    spec = dataset.spec
    try:
        inline = _inline(spec, dataset.key_path)
        if inline is not None:
            return inline
        tried: list[str] = []
        found = _from_path(spec, Path(dataset.config_path).parent, dataset.key_path, tried)
        if found is not None:
            return found
        # a file the config names and that is missing: (its key, its name, where looked)
        named = _missing_named(spec, tried)
        tried.clear()
        if data_dir is not None:
            local = _local_dir(data_dir, dataset.abbr)
            found = _from_data_dir(local, dataset.abbr, tried)
            if found is not None:
                return found
            uri = object_uri(data_dir)
            if uri is not None:  # say where on the store, not where its copy would be
                tried[:] = [uri + t[len(str(local)):] for t in tried]
        loader = spec.get("type")
        if _is_loader_class(loader):
            from .opencompass import loader_rows

            try:
                return loader_rows(
                    str(loader), spec, opencompass_python,
                    elsewhere="; --data-dir tried: " + ", ".join(tried) if tried else "",
                    hint="" if data_dir is not None else
                    f"; or pass --data-dir DIR holding DIR/{dataset.abbr}/<split>.jsonl")
            except PromptCompilerError as err:  # the loader's arguments: the dataset's keys
                raise err.located(key_path=dataset.key_path) from None
    except PromptCompilerError as err:
        raise err.located(config_path=dataset.config_path, dataset=dataset.abbr) from None
    data_dir_text = "; --data-dir tried: " + ", ".join(tried) if tried else ""
    if named:  # the config names its file: say which, where it looked, what is there
        key, name, looked = named
        raise DataError(
            f"{key} {name!r} does not exist (looked for {', '.join(looked)}){data_dir_text}",
            config_path=dataset.config_path, dataset=dataset.abbr,
            key_path=f"{dataset.key_path}.{key}", hint=_did_you_mean(name, looked))
    tried_text = "; tried: " + ", ".join(tried) if tried else "; no path to try"
    raise DataError(
        f"no rows found{tried_text}",
        config_path=dataset.config_path,
        dataset=dataset.abbr,
        key_path=dataset.key_path,
        hint=(
            f"pass --data-dir DIR holding DIR/{dataset.abbr}/<split>.jsonl "
            f"or DIR/{dataset.abbr}.jsonl"
            if data_dir is None
            else None
        ),
    )


def _missing_named(spec: Mapping[str, Any], tried: list[str]
                   ) -> tuple[str, str, list[str]] | None:
    """The config's file ``_from_path`` stopped at (it stops at the first missing one): its
    key, its name and the places looked at (the last entries of ``tried``)."""
    data_files = spec.get("data_files")
    if isinstance(data_files, dict):
        names = [(f"data_files.{k}", v) for k, v in data_files.items() if isinstance(v, str)]
    elif isinstance(data_files, str):
        names = [("data_files", data_files)]
    elif isinstance(spec.get("path"), str) and not _is_loader_class(spec.get("type")):
        names = [("path", spec["path"])]
    else:
        return None
    for key, name in names:
        path = Path(name).expanduser()
        looked = [x for x in tried if x == name or Path(x).parts[-len(path.parts):] == path.parts]
        if looked and not any(Path(x).exists() or _glob(Path(x)) for x in looked):
            return key, name, looked
    return None


def _did_you_mean(name: str, looked: list[str]) -> str | None:
    """A file beside where ``name`` was looked for whose name is close to it."""
    import difflib

    for place in looked:
        folder = Path(place).parent
        try:
            names = sorted(p.name for p in folder.iterdir() if p.is_file())
        except OSError:
            continue
        close = difflib.get_close_matches(Path(place).name, names, n=1, cutoff=0.8)
        if close:
            return f"did you mean {str(Path(name).parent / close[0])!r}?"
    return None


def _is_loader_class(loader: Any) -> bool:
    """Whether a dataset ``type`` names an OpenCompass loader class (not a built-in reader)."""
    return isinstance(loader, str) and bool(loader) and loader not in BUILTIN_READERS


def attach_rows(dataset: DatasetConfig, data_dir: Path | None = None,
                opencompass_python: str | os.PathLike[str] | None = None, *,
                no_rows: bool = False) -> DatasetConfig:
    """A copy of ``dataset`` whose spec carries its rows inline (``rows`` or ``splits``);
    with ``no_rows`` (``--check --no-rows``) stand-in rows where rows would be read
    (:mod:`.standin`)."""
    if no_rows:
        from .standin import needs_rows, stand_in

        if not needs_rows(dataset):
            return stand_in(dataset)
    rows = load_splits(dataset, data_dir, opencompass_python)
    spec = {k: v for k, v in dataset.spec.items() if k not in ("rows", "splits")}
    spec.update(rows.case_fields())
    return replace(dataset, spec=spec)


# --- the lookup steps -----------------------------------------------------------------


def _inline(spec: Mapping[str, Any], key_path: str) -> LoadedRows | None:
    if "rows" in spec:
        rows = _check_rows(spec["rows"], key_path=f"{key_path}.rows")
        return LoadedRows(rows, None, "inline")
    if "splits" in spec:
        splits = spec["splits"]
        if not isinstance(splits, dict):
            raise DataError(
                f"'splits' must map split names to lists of rows, got {type(splits).__name__}",
                key_path=f"{key_path}.splits",
            )
        checked = {
            str(name): _check_rows(rows, split=str(name), key_path=f"{key_path}.splits")
            for name, rows in splits.items()
        }
        return LoadedRows(None, checked, "inline")
    return None


def _from_path(
    spec: Mapping[str, Any], config_dir: Path, key_path: str, tried: list[str]
) -> LoadedRows | None:
    loader = spec.get("type")
    if isinstance(loader, str) and loader and loader not in BUILTIN_READERS:
        return None  # an OpenCompass loader class: rows come from the data dir
    reader = BUILTIN_READERS.get(loader) if isinstance(loader, str) else None
    data_files = spec.get("data_files")
    if isinstance(data_files, dict):
        splits: dict[str, Sequence[Row]] = {}
        for split, name in data_files.items():
            if not isinstance(name, str):
                raise DataError(
                    f"data_files[{split!r}] must be a path, got {type(name).__name__}",
                    key_path=f"{key_path}.data_files",
                )
            file = _resolve(name, config_dir, tried)
            if file is None:
                return None
            splits[str(split)] = _one_split(_read(file, reader), file)
        return LoadedRows(None, splits, ", ".join(str(p) for p in data_files.values()))
    path = data_files if isinstance(data_files, str) else spec.get("path")
    if not isinstance(path, str):
        return None
    file = _resolve(path, config_dir, tried)
    return None if file is None else _read(file, reader)


def _from_data_dir(data_dir: Path, abbr: str, tried: list[str]) -> LoadedRows | None:
    folder = data_dir / abbr
    tried.append(str(folder / "<split>.jsonl"))
    if folder.is_dir():
        files = sorted(folder.glob("*.jsonl"))
        if files:
            return LoadedRows(None, {f.stem: _jsonl(f) for f in files}, str(folder))
    single = data_dir / f"{abbr}.jsonl"
    tried.append(str(single))
    if single.is_file():
        return LoadedRows(_jsonl(single), None, str(single))
    return _parquet_from_data_dir(data_dir, abbr, tried)
def _local_dir(data_dir: Path | str, abbr: str) -> Path:
    """``--data-dir``, or for an ``s3://`` one a local copy of what it holds for ``abbr``."""
    from ..storage import local_copy, object_uri

    uri = object_uri(data_dir)
    if uri is None:
        return Path(data_dir)
    keep = (abbr, f"{abbr}.jsonl", f"{abbr}.parquet")
    return local_copy(uri, keep) or Path(os.devnull, "missing")


def _resolve(name: str, config_dir: Path, tried: list[str]) -> Path | None:
    from ..storage import local_copy, object_uri

    uri = object_uri(name)
    if uri is not None:  # rows on object storage: read from a local copy
        tried.append(uri)
        return local_copy(uri)
    path = Path(name).expanduser()
    candidates = [path] if path.is_absolute() else [config_dir / path, Path.cwd() / path]
    for candidate in candidates:
        tried.append(str(candidate))
        if candidate.exists() or _glob(candidate):
            return candidate
    return None


def _glob(pattern: Path) -> list[Path]:
    """The files a path with ``*``, ``?`` or ``[`` names, in name order (none: not a glob)."""
    import glob

    text = str(pattern)
    if not glob.has_magic(text) or pattern.exists():
        return []
    return [Path(f) for f in sorted(glob.glob(text)) if Path(f).is_file()]


def _read(file: Path, reader: str | None) -> LoadedRows:
    matched = _glob(file)
    if matched:
        return glob_rows(str(file), matched, reader)
    _check_kind(file, folder_ok=reader in (None, "hf_disk", "parquet"))
    if reader is None:
        if file.is_dir():
            reader = "hf_disk" if any((file / m).exists() for m in _HF_MARKERS) else "dir"
        else:
            reader = _SUFFIX_READERS.get(file.suffix.lower())
    if reader in ("dir", "parquet"):
        found = parquet_folder_rows(file)
        if found is not None:
            return found
    if reader == "dir":
        files = sorted(file.glob("*.jsonl"))
        if not files:
            raise DataError(f"{file}: folder holds no <split>.jsonl or <split>.parquet files")
        return LoadedRows(None, {f.stem: _jsonl(f) for f in files}, str(file))
    if not file.is_dir() and not file.is_file() and _PEEKING.get():
        raise NotPeekable(str(file))
    if reader == "jsonl":
        return LoadedRows(_jsonl(file), None, str(file))
    if reader == "chatml":
        return LoadedRows(chatml_rows(file), None, str(file))
    if reader == "json":
        data = read_json(file)
        if isinstance(data, list):
            return LoadedRows(data, None, str(file))
        return LoadedRows(None, data, str(file))
    if reader == "csv":
        return LoadedRows(read_csv(file), None, str(file))
    if reader == "hf_disk":
        data_hf = read_hf_disk(file)
        if isinstance(data_hf, list):
            return LoadedRows(data_hf, None, str(file))
        return LoadedRows(None, data_hf, str(file))
    raise DataError(
        f"{file}: cannot tell how to read this file (suffix {file.suffix or '(none)'!r})",
        hint="set the dataset's type to one of: jsonl, json, csv, parquet, hf_disk",
    )


def _one_split(rows: LoadedRows, file: Path) -> Sequence[Row]:
    if rows.rows is None:
        raise DataError(f"{file}: a data_files entry must hold one split (a list of rows)")
    return rows.rows


def _check_rows(rows: Any, *, file: str = "", split: str = "", key_path: str = "") -> list[Row]:
    """``rows`` itself, after checking that it is a list of objects."""
    prefix = (f"{file}: " if file else "") + (f"split {split!r}: " if split else "")
    if not isinstance(rows, list):
        raise DataError(
            f"{prefix}expected a list of rows, got {type(rows).__name__}",
            key_path=key_path or None,
        )
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DataError(
                f"{prefix}row {index} is a {type(row).__name__}, expected an object "
                "(column -> value)",
                key_path=key_path or None,
            )
        if len(row) > 100:
            _check_columns(len(row), f"{prefix}row {index}", key_path)
        check_row(row, f"{prefix}row {index}", key_path)
    return rows


def _check_columns(count: int, where: str, key_path: str = "") -> None:
    """Refuse a row (or CSV header) of more columns than the limit."""
    limit = limits.current().columns
    if count > limit:
        raise LimitError(f"{where}: {count:,} columns; " + limits.describe("columns", limit),
                         key_path=key_path or None)


# --- readers --------------------------------------------------------------------------


PIPES_ENV = "PROMPT_COMPILER_READ_PIPES"
"""Set to ``1`` to read rows from named pipes (read once, eagerly; a pipe nobody writes to
waits for a writer). Without it a pipe is refused like any file that is not a regular file."""

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"),
          (stat.S_ISSOCK, "a socket"))


def _check_kind(file: Path, *, folder_ok: bool) -> str:
    """``"file"``, ``"dir"`` (when ``folder_ok``) or ``"pipe"`` (when allowed); any other
    kind of path (``/dev/zero``, a socket, a folder where a file is expected) is refused
    before it is opened, since reading it never ends or cannot be done."""
    try:
        mode = os.stat(file).st_mode
    except OSError as exc:
        raise DataError(f"{file}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return "file"
    if folder_ok and stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISFIFO(mode) and os.environ.get(PIPES_ENV) == "1":
        return "pipe"
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise DataError(f"{file}: is {kind}, not a regular file; rows are read from regular files",
                    hint=(f"set {PIPES_ENV}=1 to read rows from a named pipe"
                          if stat.S_ISFIFO(mode) else None))


def _open_regular(file: Path, flags: int = 0) -> int:
    """A descriptor of ``file``, opened without blocking (a path swapped for a pipe cannot
    hang the run) and checked to be a regular file."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | flags)
    except OSError as exc:
        raise DataError(f"{file}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        _check_kind(file, folder_ok=False)
        raise DataError(f"{file}: is not a regular file; rows are read from regular files")
    return fd


def _text(file: Path) -> str:
    """A data file read whole (JSON, CSV), refused unread when it is over the file limit."""
    limit = limits.current().file_bytes
    try:
        size = os.stat(file).st_size
        if size > limit:
            raise LimitError(f"{file}: {size:,} bytes, read whole as a {file.suffix or 'data'} "
                             "file; " + limits.describe("file_bytes", limit, "bytes"),
                             hint="JSON Lines (.jsonl) and Parquet files stream at any size")
        return file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"{file}: cannot read: {exc.strerror or exc}") from None


def read_jsonl(file: Path) -> list[Row]:
    """Rows of a JSON Lines file (blank lines skipped), read line by line: used for pipes.

    Raises:
        DataError: A line is not JSON or not an object (file and line number named).
        LimitError: A line is longer than the line limit (read no further than the limit).
    """
    limit = limits.current().line_bytes
    rows: list[Row] = []
    try:
        with open(file, "rb") as fh:
            lineno = 0
            while True:
                # Lines end at "\n" only, as in JsonlRows, so both readers see the same rows.
                line = fh.readline(limit + 2)
                if not line:
                    break
                lineno += 1
                if len(line) - line.endswith(b"\n") > limit:
                    raise LimitError(f"{file}: line {lineno} is too long; "
                                     + limits.describe("line_bytes", limit, "bytes"))
                if lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]
                if line.strip():
                    rows.append(_parse_line(line, file, lineno, len(rows)))
    except OSError as exc:
        raise DataError(f"{file}: cannot read: {exc.strerror or exc}") from None
    return rows


_PEEKING: ContextVar[bool] = ContextVar("peeking", default=False)

JSONL_OPENER: ContextVar[Callable[[Path], JsonlRows | None] | None] = ContextVar(
    "jsonl_opener", default=None)
"""How a JSON Lines file is opened instead of whole, while set (a Ray worker's row window:
:func:`prompt_compiler.data.windows.row_windows` sets it); None: streamed whole."""


class NotPeekable(Exception):
    """Raised under :func:`peeking` instead of reading a file that can be read only once."""


@contextmanager
def peeking() -> Iterator[None]:
    """Load rows only from regular files (a pipe raises :class:`NotPeekable`, unread), so a
    process can size a dataset without consuming input meant for another."""
    token = _PEEKING.set(True)
    try:
        yield
    finally:
        _PEEKING.reset(token)


def chatml_rows(file: Path) -> list[Row]:
    """The rows OpenCompass 0.5.4's ``ChatMLDataset`` loads from a ChatML JSON Lines file.

    Each line holds ``question`` (messages: ``system``/``user``/``assistant`` dicts with a
    ``content``) and ``answer`` (a list of strings); other keys are dropped. A row is
    ``chatml_question``, ``chatml_answer`` (those two), ``question`` (the content of the first
    user message) and ``answer`` (the first answer, ``''`` if none).

    Raises:
        DataError: A line is not of that shape (file and line named).
    """
    rows: list[Row] = []
    for n, raw in enumerate(read_jsonl(file)):
        where = f"{file}: row {n}"
        question, answer = raw.get("question"), raw.get("answer")
        if not isinstance(question, list) or not all(
                isinstance(m, dict) and m.get("role") in ("system", "user", "assistant")
                and "content" in m for m in question):
            raise DataError(f"{where}: a ChatML row's 'question' is a list of messages "
                            "(dicts with a role system, user or assistant and a content)")
        if not isinstance(answer, list) or not all(isinstance(a, str) for a in answer):
            raise DataError(f"{where}: a ChatML row's 'answer' is a list of strings")
        users = sum(m["role"] == "user" for m in question)
        if len(answer) not in (1, users):
            raise DataError(f"{where}: a ChatML row has one answer or one per user message "
                            f"({users}), got {len(answer)} (OpenCompass's check)")
        user = next((m["content"] for m in question if m["role"] == "user"), None)
        if not user:
            raise DataError(f"{where}: a ChatML row needs a user message with content "
                            "(OpenCompass's ChatMLDataset takes the first one as the question)")
        rows.append({"chatml_question": question, "chatml_answer": answer,
                     "question": user, "answer": answer[0] if answer else ""})
    return rows


def _jsonl(file: Path) -> Sequence[Row]:
    """A regular file streams (:class:`JsonlRows`); a pipe (allowed by
    ``PROMPT_COMPILER_READ_PIPES=1``) is read now, once; anything else is refused."""
    if _check_kind(file, folder_ok=False) == "file":
        opener = JSONL_OPENER.get()
        window = opener(file) if opener is not None else None
        return window if window is not None else JsonlRows(file)
    if _PEEKING.get():
        raise NotPeekable(str(file))
    return read_jsonl(file)


def _parse_line(line: bytes, file: Path, lineno: int, row: int) -> Row:
    """One JSONL line as a row (orjson, or the stdlib where orjson is stricter: integers
    beyond 64 bits, ``NaN``, escaped lone surrogates), so values are what ``json`` reads."""
    flat = True
    try:
        value = orjson.loads(line)  # integers of at most 64 bits
    except orjson.JSONDecodeError:
        flat = False
        try:
            value = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise DataError(f"{file}: line {lineno}: not UTF-8 text ({exc.reason} at byte "
                            f"{exc.start})") from None
        except json.JSONDecodeError as exc:
            raise DataError(
                f"{file}: line {lineno}: malformed JSON: {exc.msg} (column {exc.colno})"
            ) from None
        except (ValueError, RecursionError) as exc:  # a huge integer, very deep nesting
            why = describe_load_error(exc) or f"invalid JSON value: {exc}"
            raise DataError(f"{file}: line {lineno} (row {row}): {why}") from None
    if not isinstance(value, dict):
        raise DataError(f"{file}: line {lineno} (row {row}): a row must be a JSON object, got "
                        f"{type(value).__name__}")
    _check_columns(len(value), f"{file}: line {lineno} (row {row})")
    if not flat or not _FLAT.isdisjoint(map(type, value.values())):
        check_row(value, f"{file}: line {lineno} (row {row})")
    return value


_FLAT = frozenset((dict, list))
"""Value types that :func:`_parse_line` checks (nesting depth); other values need no check."""


_CHUNK = 1 << 22
"""Bytes read at a time while indexing a JSON Lines file."""


class JsonlRows(LazyRows):
    """The rows of a JSON Lines file, read when used: a large test split streams through the
    compiler instead of being held in memory.

    Opening the file indexes where each non-blank line starts and ends (16 bytes a row) and
    parses the first row; any other row is parsed when it is read, so a malformed line further
    down is reported (file and line) when the compile reaches it, and nothing is written.
    Iterating reads the file in order; indexing reads one line.
    """

    def __init__(self, file: Path) -> None:
        self.file = Path(file)
        self._starts, self._ends = array("q"), array("q")
        self._blank_lines = False
        found = limits.current()
        self._columns = found.columns
        fd = _open_regular(self.file)
        try:
            self._index_fd(fd, found.line_bytes)
        except OSError as exc:
            raise DataError(f"{file}: cannot read: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
        self._fd: int | None = None
        if self._starts:
            self[0]  # a file that is not JSON Lines at all fails here, not mid-compile

    def _index_fd(self, fd: int, limit: int) -> None:
        """Index every non-blank line, reading ``fd`` in chunks: a line is never copied
        whole, and one longer than ``limit`` bytes stops the scan as soon as it is seen."""
        pos = start = begin = 0  # offset of the next chunk; current line's text; its start
        lineno, nonblank, first = 1, False, True
        while True:
            data = os.read(fd, _CHUNK)
            if first:
                first = False
                while 0 < len(data) < 3:  # tiny chunks (tests): read past a possible BOM
                    more = os.read(fd, 3)
                    if not more:
                        break
                    data += more
                if data.startswith(b"\xef\xbb\xbf"):  # a BOM: line 1 starts after it
                    data, pos, start = data[3:], 3, 3
                    if not data:
                        continue
            if not data:
                break
            nl = data.find(b"\n")
            if nl < 0:  # the chunk continues the current line
                nonblank = nonblank or bool(data.strip())
                pos += len(data)
                self._check_length(pos - start, lineno, limit)
                continue
            self._close_line(start, pos + nl, nonblank or bool(data[:nl].strip()), lineno,
                             limit)
            lineno += 1
            cut = data.rfind(b"\n") + 1
            if cut > nl + 1:
                lineno += self._index_lines(data[nl + 1:cut], pos + nl + 1, lineno, limit)
            start = begin = pos + cut
            nonblank = bool(data[cut:].strip())
            pos += len(data)
            self._check_length(pos - start, lineno, limit)
        if pos > begin:  # a last line without a newline
            self._close_line(start, pos, nonblank, lineno, limit, newline=False)

    def _check_length(self, length: int, lineno: int, limit: int) -> None:
        if length > limit:
            raise LimitError(f"{self.file}: line {lineno} is too long; "
                             + limits.describe("line_bytes", limit, "bytes"))

    def _close_line(self, start: int, end: int, nonblank: bool, lineno: int, limit: int,
                    *, newline: bool = True) -> None:
        """Record the line ``start:end`` (``end`` at its newline, if it has one)."""
        self._check_length(end - start, lineno, limit)
        if nonblank:
            self._starts.append(start)
            self._ends.append(end + 1 if newline else end)
        else:
            self._blank_lines = True

    def _index_lines(self, chunk: bytes, pos: int, lineno: int, limit: int) -> int:
        """Index the whole lines of ``chunk`` (each ends with a newline), which starts at
        byte ``pos`` of the file; returns how many lines it holds."""
        lines = chunk.split(b"\n")
        lines.pop()  # what follows the final newline: nothing
        longest = max(map(len, lines))
        if longest > limit:
            self._check_length(longest, lineno + [len(x) for x in lines].index(longest), limit)
        if not all(map(bytes.strip, lines)):
            for line in lines:  # blank lines: line by line
                self._close_line(pos, pos + len(line), bool(line.strip()), lineno, limit)
                pos += len(line) + 1
            return len(lines)
        bounds = array("q", accumulate([len(line) + 1 for line in lines], initial=pos))
        self._starts.extend(bounds[:-1])
        self._ends.extend(bounds[1:])
        return len(lines)

    def __len__(self) -> int:
        return len(self._starts)

    def byte_cuts(self, lo: int, hi: int, fractions: Sequence[float]) -> list[int]:
        """Bounds that cut rows ``lo``..``hi`` at those fractions of their bytes in the file
        (rows differ in length), counted from ``lo``: 0 for a fraction <= 0, ``hi - lo`` for
        one >= 1."""
        from bisect import bisect_left

        starts = self._starts
        first = starts[lo]
        size = self._ends[hi - 1] - first
        return [bisect_left(starts, first + size * c, lo, hi) - lo if 0 < c < 1 else
                (0 if c <= 0 else hi - lo) for c in fractions]

    def _row(self, index: int) -> Row:
        if self._fd is None:
            self._fd = _open_regular(self.file)
            weakref.finalize(self, os.close, self._fd)
        start, end = self._span(index)
        line = os.pread(self._fd, end - start, start)
        return _parse_line(line, self.file, self._lineno(index), index)

    def _span(self, index: int) -> tuple[int, int]:
        """Where row ``index`` lies in the file: its first byte and the byte after it."""
        return self._starts[index], self._ends[index]

    def iter_range(self, start: int, stop: int) -> Iterator[Row]:
        """Rows ``start`` to ``stop - 1``, read in order (one seek, then buffered reads)."""
        stop = min(stop, len(self))
        if start >= stop:
            return
        skip_blank = self._blank_lines
        lineno = self._lineno(start)
        loads, flat, file = orjson.loads, _FLAT, self.file
        columns = self._columns
        with open(_open_regular(file), "rb", buffering=1 << 20) as fh:
            fh.seek(self._span(start)[0])
            row = start
            for line in fh:
                if skip_blank and not line.strip():
                    lineno += 1
                    continue
                try:  # the common row: a flat JSON object orjson reads
                    value = loads(line)
                except orjson.JSONDecodeError:
                    value = None
                if (type(value) is dict and len(value) <= columns
                        and flat.isdisjoint(map(type, value.values()))):
                    yield value
                else:
                    yield _parse_line(line, file, lineno, row)
                row += 1
                lineno += 1
                if row >= stop:
                    break

    def _lineno(self, index: int) -> int:
        """The 1-based line number of row ``index`` (read from the file if lines are blank)."""
        if not self._blank_lines:
            return index + 1
        with open(_open_regular(self.file), "rb") as fh:
            return fh.read(self._starts[index]).count(b"\n") + 1

    def __repr__(self) -> str:
        return f"JsonlRows({str(self.file)!r}, {len(self)} rows)"


def read_json(file: Path) -> list[Row] | dict[str, list[Row]]:
    """A JSON file holding a list of row objects, or ``{split: [row, ...]}``.

    Raises:
        DataError: Malformed JSON (line named) or another shape.
    """
    text = _text(file)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{file}: line {exc.lineno}, column {exc.colno}: malformed JSON: {exc.msg}"
        ) from None
    except (ValueError, RecursionError) as exc:  # a huge integer, very deep nesting
        why = describe_load_error(exc) or f"invalid JSON value: {exc}"
        raise DataError(f"{file}: {why}") from None
    if isinstance(data, list):
        return _check_rows(data, file=str(file))
    if isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        return {
            str(split): _check_rows(rows, file=str(file), split=str(split))
            for split, rows in data.items()
        }
    raise DataError(
        f"{file}: expected a list of row objects or {{split: [rows]}}, got "
        f"{type(data).__name__}"
    )


def read_csv(file: Path) -> list[Row]:
    """Rows of a CSV file with a header line; values stay strings.

    Raises:
        DataError: No header, a duplicated column, or a row with a different number of
            fields than the header (file, line and row named).
    """
    import csv

    reader = csv.reader(_text(file).splitlines(keepends=True))
    try:
        header = next(reader)
    except StopIteration:
        raise DataError(f"{file}: empty CSV file (expected a header line)") from None
    except csv.Error as exc:
        raise DataError(f"{file}: line 1: malformed CSV: {exc}") from None
    _check_columns(len(header), f"{file}: line 1 (the header)")
    seen: set[str] = set()
    twice: set[str] = set()
    for name in header:
        (twice if name in seen else seen).add(name)
    duplicated = sorted(twice)
    if duplicated:
        raise DataError(f"{file}: line 1: duplicated column(s) {', '.join(duplicated)}")
    rows: list[Row] = []
    try:
        for fields in reader:
            if not fields:
                continue
            if len(fields) != len(header):
                raise DataError(
                    f"{file}: line {reader.line_num} (row {len(rows)}): {len(fields)} fields, "
                    f"but the header has {len(header)} ({', '.join(header)})"
                )
            rows.append(dict(zip(header, fields, strict=True)))
    except csv.Error as exc:
        raise DataError(f"{file}: line {reader.line_num}: malformed CSV: {exc}") from None
    return rows


def read_hf_disk(path: Path) -> list[Row] | dict[str, list[Row]]:
    """A Hugging Face ``Dataset`` (rows) or ``DatasetDict`` (splits) saved with save_to_disk.

    Raises:
        DataError: The ``datasets`` package (extra ``compile-prompts[hf]``) is missing, or
            the folder is not a saved dataset.
    """
    try:
        import datasets  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise DataError(
            f"{path}: reading a saved Hugging Face dataset needs the 'datasets' package",
            hint="install the extra: " + install_hint("hf"),
        ) from None
    try:
        loaded = datasets.load_from_disk(str(path))
    except Exception as exc:  # datasets raises several types for a bad folder
        raise DataError(f"{path}: not a saved Hugging Face dataset: {exc}") from None
    if isinstance(loaded, datasets.DatasetDict):
        return {str(name): list(split.to_list()) for name, split in loaded.items()}
    return list(loaded.to_list())


def row_files(dataset: DatasetConfig, data_dir: Path | None = None,
              opencompass_python: str | os.PathLike[str] | None = None) -> list[Path | str]:
    """The files :func:`load_splits` reads for ``dataset`` (for the manifest), without
    reading them: its ``path``/``data_files`` (every file of a folder), else its files in
    ``data_dir``, else those OpenCompass's loader read (its cache entry); none for inline
    rows or rows that are not found. Objects on object storage are their ``s3://`` URIs."""
    spec = dataset.spec
    if "rows" in spec or "splits" in spec:
        return []
    config_dir = Path(dataset.config_path).parent
    loader = spec.get("type")
    names: list[Any] = []
    if not (isinstance(loader, str) and loader and loader not in BUILTIN_READERS):
        data_files = spec.get("data_files")
        if isinstance(data_files, dict):
            names = list(data_files.values())
        elif isinstance(data_files, str) or isinstance(spec.get("path"), str):
            names = [data_files if isinstance(data_files, str) else spec["path"]]
    if any(object_uri(n) for n in names):  # on object storage: listed, not fetched
        from ..storage import objects

        return [o for n in names if isinstance(n, str) for o in objects(object_uri(n) or n)]
    found = [_resolve(n, config_dir, []) for n in names if isinstance(n, str)]
    if names and all(f is not None for f in found):
        return [g for f in found if f is not None
                for g in (sorted(p for p in f.rglob("*") if p.is_file()) if f.is_dir() else
                          _glob(f) or [f])]
    in_data_dir = _data_dir_files(data_dir, dataset.abbr)
    if in_data_dir:
        return in_data_dir
    if _is_loader_class(loader):
        from .opencompass import loader_files

        return list(loader_files(str(loader), spec, opencompass_python))
    return []


def _data_dir_files(data_dir: Path | None, abbr: str) -> list[Path | str]:
    """A dataset's files in ``--data-dir`` (on object storage: their URIs, not fetched)."""
    if data_dir is None:
        return []
    uri = object_uri(data_dir)
    at: Callable[[str], Path | str]
    if uri is None:
        base = Path(data_dir)
        names = {p.relative_to(base).as_posix()
                 for p in [*(base / abbr).glob("*"), *base.glob(f"{abbr}.*")] if p.is_file()}
        at = base.joinpath
    else:
        from ..storage import join, objects

        found = objects(uri, (abbr, f"{abbr}.jsonl", f"{abbr}.parquet"))
        names = {o[len(uri) + 1:] for o in found}
        at = partial(join, uri)
    for suffix in (".jsonl", ".parquet"):
        files = sorted(n for n in names if n.startswith(abbr + "/") and n.endswith(suffix)
                       and "/" not in n[len(abbr) + 1:])
        if files:
            return [at(n) for n in files]
        if abbr + suffix in names:
            return [at(abbr + suffix)]
    return []


def bridge_calls(datasets: Sequence[DatasetConfig], data_dir: Path | None = None,
                 ) -> list[tuple[str, dict[str, Any]]]:
    """``(class, load kwargs)`` of every dataset whose rows OpenCompass's own loader gives (no
    inline rows, none in ``data_dir``, a loader class with no native reader): what
    :func:`prompt_compiler.data.opencompass.bridge.prefetch` loads in one process."""
    from .opencompass import load_kwargs, native_reader

    calls = []
    for dataset in datasets:
        spec = dataset.spec
        loader = spec.get("type")
        if ("rows" in spec or "splits" in spec or not _is_loader_class(loader)
                or native_reader(str(loader)) is not None
                or _data_dir_files(data_dir, dataset.abbr)):
            continue
        calls.append((str(loader), load_kwargs(spec)))
    return calls


# --- Parquet (prompt_compiler.data.parquet reads the files) --------------------------------


def parquet_folder_rows(folder: Path) -> LoadedRows | None:
    """A ``.parquet`` file (one split used as both) or a folder of Parquet splits as
    :class:`LoadedRows`; None for a folder without any."""
    from . import parquet

    if not folder.is_dir():
        return LoadedRows(parquet.ParquetRows([folder]), None, str(folder))
    splits = parquet.parquet_splits(folder)
    if not splits:
        return None
    return LoadedRows(None, {name: parquet.ParquetRows(files) for name, files in splits.items()},
                       str(folder))


def _parquet_from_data_dir(data_dir: Path, abbr: str, tried: list[str]) -> LoadedRows | None:
    """``DIR/<abbr>/<split>.parquet`` (splits) or ``DIR/<abbr>.parquet`` (one split), else
    None; both are added to ``tried``."""
    from . import parquet

    folder = data_dir / abbr
    tried.append(str(folder / "<split>.parquet"))
    if folder.is_dir():
        found = parquet_folder_rows(folder)
        if found is not None:
            return found
    single = data_dir / f"{abbr}.parquet"
    tried.append(str(single))
    if single.is_file():
        return LoadedRows(parquet.ParquetRows([single]), None, str(single))
    return None


def glob_rows(pattern: str, files: Sequence[Path], reader: str | None) -> LoadedRows:
    """The files a glob matched, read as one split in name order: all Parquet, or all
    JSON Lines."""
    from . import parquet

    kinds = {reader or {".parquet": "parquet", ".jsonl": "jsonl"}.get(f.suffix.lower(), "")
             for f in files}
    if kinds == {"parquet"}:
        return LoadedRows(parquet.ParquetRows(files), None, pattern)
    if kinds == {"jsonl"}:
        parts = [_jsonl(f) for f in files]
        joined = parts[0] if len(parts) == 1 else parquet.ConcatRows(parts)
        return LoadedRows(joined, None, pattern)
    raise DataError(f"{pattern}: a glob must match only .parquet or only .jsonl files, got "
                    f"{', '.join(sorted({f.suffix or '(none)' for f in files}))}")


def __getattr__(name: str) -> Any:
    if name == "DatasetRows":  # its name before LoadedRows (two classes shared it)
        import warnings

        warnings.warn("prompt_compiler.data.sources.DatasetRows is now LoadedRows (the name "
                      "DatasetRows is the reader's train/test rows)", DeprecationWarning,
                      stacklevel=2)
        return LoadedRows
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
