"""prompt_compiler: compile declarative prompt configs into the exact model inputs."""

from __future__ import annotations

from .errors import *  # noqa: F403
from .errors import __all__ as _errors_all

__version__ = "0.1.0"

__all__ = [*_errors_all, "__version__"]
