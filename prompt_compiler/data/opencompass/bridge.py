"""OpenCompass's own loader, for a loader class that has no native reader.

(A stub: the subprocess runner replaces the body of :func:`load_with_opencompass`.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import DataError
from ..rows import Row

__all__ = ["load_with_opencompass"]


def load_with_opencompass(type_name: str, kwargs: Mapping[str, Any], data_root: Path,
                          settings: Any = None) -> Sequence[Row] | Mapping[str, Sequence[Row]]:
    """The rows ``type_name.load(**kwargs)`` returns, run by OpenCompass in another
    interpreter with ``data_root`` as its working folder: one split (a ``Dataset``) or
    ``{split: rows}`` (a ``DatasetDict``).

    Raises:
        DataError: No OpenCompass interpreter is given.
    """
    raise DataError(
        f"{type_name} is not a native reader; give --opencompass-python PATH (or "
        "PROMPT_COMPILER_OPENCOMPASS_PYTHON) to run OpenCompass's own loader")
