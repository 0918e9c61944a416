"""The exception tree of prompt_compiler.

Every error the library raises on bad input derives from :class:`PromptCompilerError`
and carries *where* it happened (config file, dataset abbr, key path, row index) and,
when useful, a hint. Each class also derives from the built-in exception a generic
handler would expect, so ``except KeyError`` around a lookup keeps working::

    PromptCompilerError
    ├── ConfigError (ValueError)              a config is malformed
    │   ├── RegistryError (LookupError)       unknown retriever/inferencer/renderer name
    │   └── UnexpectedKeyError (TypeError)    a key the OpenCompass class does not take
    ├── DataError (ValueError)                rows, files, columns
    │   └── MissingFieldError (KeyError)      a column the template or reader needs is absent
    ├── TemplateError (ValueError)            a prompt template is malformed
    │   ├── TemplateTypeError (TypeError)     a template built with wrong types or arguments
    │   ├── TemplateSyntaxError               a Jinja2 template does not parse
    │   ├── MissingTokenError (LookupError)   ice_token declared but absent / required
    │   └── LabelError (KeyError)             a label is not a key of the label dict
    ├── MetaTemplateError (ValueError)        a model meta template is malformed
    │   └── UnknownRoleError (KeyError)       a role the meta template does not declare
    ├── SectionError (IndexError)             unbalanced begin/round/end sections
    ├── RetrievalError (IndexError)           in-context example ids out of range
    ├── RenderError (TypeError)               a prompt that cannot take the requested shape
    ├── UnsupportedError (ValueError)         a valid combination the target system rejects
    │   ├── ScoringNotImplementedError        the model class cannot score (NotImplementedError)
    │   └── ScoringMethodMissingError         the model class lacks the method (AttributeError)
    ├── LimitError (ValueError)               an input over a size limit (safety.limits)
    ├── WorkerError (RuntimeError)            a --jobs worker died while compiling a pair
    └── OutputError (OSError)                 the output folder cannot be locked, written, replaced

In ``compat="opencompass"`` mode, where OpenCompass itself raises, this project raises
the matching class above and records OpenCompass's own exception as
:attr:`PromptCompilerError.reference` (type name and message), so a conformance check
can compare both. ``docs/errors.md`` lists the mapping.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "DataError",
    "LabelError",
    "LimitError",
    "MetaTemplateError",
    "MissingFieldError",
    "MissingTokenError",
    "OutputError",
    "PromptCompilerError",
    "PromptCompilerWarning",
    "RegistryError",
    "RenderError",
    "RetrievalError",
    "ScoringMethodMissingError",
    "ScoringNotImplementedError",
    "SectionError",
    "TemplateError",
    "TemplateSyntaxError",
    "TemplateTypeError",
    "UnexpectedKeyError",
    "UnknownRoleError",
    "UnsupportedError",
    "WorkerError",
]

_LOCATION_FIELDS = ("config_path", "dataset", "model", "key_path", "row")


class PromptCompilerError(Exception):
    """Root of every error raised on bad input.

    Args:
        message: What is wrong and what was expected.
        config_path: The config file the input came from.
        dataset: The dataset abbr.
        model: The model abbr.
        key_path: Where in the config, e.g. ``infer_cfg.prompt_template.template.round[1]``.
        row: The row index (within its split) being compiled.
        hint: How to fix it.
        reference: ``(type name, message)`` of the exception OpenCompass raises for the
            same input, when this error reproduces one.
    """

    def __init__(
        self,
        message: str,
        *,
        config_path: str | None = None,
        dataset: str | None = None,
        model: str | None = None,
        key_path: str | None = None,
        row: int | None = None,
        hint: str | None = None,
        reference: tuple[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.config_path = config_path
        self.dataset = dataset
        self.model = model
        self.key_path = key_path
        self.row = row
        self.hint = hint
        self.reference = reference

    def located(self, **where: Any) -> PromptCompilerError:
        """Fill location fields that are still unknown (outer layers know more) and return self."""
        for name, value in where.items():
            if name not in _LOCATION_FIELDS:
                raise TypeError(f"unknown location field {name!r}")
            if value is not None and getattr(self, name) is None:
                setattr(self, name, value)
        return self

    def where(self) -> str:
        """The location prefix, e.g. ``configs/x.py: dataset 'gsm8k', row 3, at infer_cfg.x``."""
        parts = []
        if self.dataset is not None:
            parts.append(f"dataset {self.dataset!r}")
        if self.model is not None:
            parts.append(f"model {self.model!r}")
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.key_path:
            parts.append(f"at {self.key_path}")
        text = ", ".join(parts)
        if self.config_path:
            text = f"{self.config_path}: {text}" if text else self.config_path
        return text

    def __str__(self) -> str:
        where = self.where()
        text = f"{where}: {self.message}" if where else self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        # Keeps errors intact across worker processes (multiprocessing pickles them).
        return (_rebuild, (type(self), self.message, self.__dict__.copy()))


def _rebuild(cls: type[PromptCompilerError], message: str, state: dict[str, Any]) -> Any:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    return err


class ConfigError(PromptCompilerError, ValueError):
    """A config file or config dict is malformed."""


class RegistryError(ConfigError, LookupError):
    """A type name (retriever, inferencer, renderer, reader, ...) is not registered."""


class UnexpectedKeyError(ConfigError, TypeError):
    """A config key the OpenCompass class it is passed to does not take (a ``TypeError``
    there); an error in compat mode, a warning in the default mode."""


class DataError(PromptCompilerError, ValueError):
    """Dataset rows cannot be read or do not have the expected shape."""


class MissingFieldError(DataError, KeyError):
    """A column that the reader config or a template needs is absent from the rows."""

    __str__ = PromptCompilerError.__str__  # KeyError would repr-quote the message


class TemplateError(PromptCompilerError, ValueError):
    """A prompt template is malformed."""


class TemplateTypeError(TemplateError, TypeError):
    """A template built with arguments of the wrong type, or arguments its OpenCompass class
    does not take (a ``TypeError`` there, e.g. ``PromptTemplate(prompt=...)``)."""


class TemplateSyntaxError(TemplateError):
    """A Jinja2 template does not parse."""


class MissingTokenError(TemplateError, LookupError):
    """An ``ice_token`` is declared but missing from the template, or required but not declared."""


class LabelError(TemplateError, KeyError):
    """A label is not a key of a label-dict (PPL) template."""

    __str__ = PromptCompilerError.__str__


class MetaTemplateError(PromptCompilerError, ValueError):
    """A model meta template is malformed."""


class UnknownRoleError(MetaTemplateError, KeyError):
    """A prompt uses a role that the meta template does not declare."""

    __str__ = PromptCompilerError.__str__


class SectionError(PromptCompilerError, IndexError):
    """``begin``/``round``/``end`` sections are unbalanced or a role item lies outside them."""


class RetrievalError(PromptCompilerError, IndexError):
    """In-context example ids are out of range for the training split."""


class RenderError(PromptCompilerError, TypeError):
    """A prompt cannot take the requested shape (e.g. messages where a string is needed)."""


class UnsupportedError(PromptCompilerError, ValueError):
    """A well-formed combination that the reproduced system rejects (e.g. CLP with an API model)."""


class LimitError(PromptCompilerError, ValueError):
    """An input is over one of the size limits of :mod:`prompt_compiler.safety.limits` (a YAML alias
    bomb, a huge JSONL line, too many columns, a template building a huge value, ...).

    The message names the limit and the environment variable that raises it.
    """


class ScoringNotImplementedError(UnsupportedError, NotImplementedError):
    """The model's OpenCompass class cannot score what the inferencer asks (``get_ppl``
    raises ``NotImplementedError`` there, e.g. PPL with ``HuggingFacewithChatTemplate``)."""


class ScoringMethodMissingError(UnsupportedError, AttributeError):
    """The model's OpenCompass class has no scoring method the inferencer calls
    (``get_loglikelihood``, ``get_logits``: an ``AttributeError`` there)."""

    __str__ = PromptCompilerError.__str__


class PromptCompilerWarning(UserWarning):
    """Something a user should know that does not stop the compile (e.g. a dropped
    system message); the CLI prints it as ``compile-prompts: warning: ...``."""


class WorkerError(PromptCompilerError, RuntimeError):
    """A ``--jobs`` worker process died (killed, out of memory) while compiling a pair; the
    message names the pair and how the process ended."""


class OutputError(PromptCompilerError, OSError):
    """The output folder cannot be locked, written or replaced (the message names the path).

    Raised for an OS error while writing (permission, disk full, not a folder, ...), for a
    folder that another run holds, and for a non-empty folder this tool did not write.
    """

    __str__ = PromptCompilerError.__str__
