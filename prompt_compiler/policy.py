"""Compile policy: which OpenCompass defects are fixed.

``compat="opencompass"`` fixes none (byte-identical to OpenCompass 0.5.4, defects
included); the default fixes every defect listed in ``docs/defects.md`` and nothing
else. Code branches name the defect they fix (``policy.fixes("D3")``), so each
divergence from OpenCompass is findable by its id.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFECTS", "Policy"]

DEFECTS: dict[str, str] = {
    "D1": "placeholders filled in one pass; in-context examples are never re-formatted",
    "D2": "sep_token removed from in-context examples",
    "D3": "the end section is opened with pos='begin' and renders like begin",
    "D5": "PPL: one fitted set of in-context examples for every label",
    "D6": "PPL labels from data in first-appearance order",
    "D9": "CLP: the prompt is re-parsed after each in-context example drop",
    "D10": "ChatInferencer: only section markers are skipped",
    "D12": "LM parser: round roles fall back to fallback_role",
    "D14": "API parser: begin/end items never stop generation",
    "D15": "RawPromptTemplate masks the output column in gen prompts",
    "D16": "ChatInferencer: empty string items are skipped",
    "D17": "BM25: score ties ranked by descending row index",
    "D18": "RawPromptTemplate messages pass to chat-template models unchanged",
    "D19": "InferencePPLOnlyInferencer drops in-context examples to fit max_seq_len",
    "D20": "DPPRetriever returns its selection ordered by relevance",
    "D21": "token ids hold exactly one BOS where the model has one",
    "D22": "LL: mask_length is the context's token count",
    "D23": "token ids: special-token text from data is ordinary text",
    "D24": "a prompt's own system turn replaces the meta template's default one",
}

_MODES = {"default": frozenset(DEFECTS), "opencompass": frozenset(), "compat": frozenset()}


@dataclass(frozen=True, slots=True)
class Policy:
    """The set of fixed defects; immutable and cheap to pass around."""

    fixed: frozenset[str]

    @classmethod
    def of(cls, mode: str | Policy | None = None) -> Policy:
        """``None``/``"default"`` -> all fixes; ``"opencompass"``/``"compat"`` -> none."""
        if isinstance(mode, Policy):
            return mode
        key = "default" if mode is None else mode
        if key not in _MODES:
            from .errors import ConfigError

            raise ConfigError(
                f"unknown compat mode {mode!r}; expected 'default' or 'opencompass'"
            )
        return cls(_MODES[key])

    @property
    def compat(self) -> bool:
        """True when no defect is fixed (OpenCompass's exact behaviour)."""
        return not self.fixed

    @property
    def name(self) -> str:
        return "opencompass" if self.compat else "default"

    def fixes(self, defect: str) -> bool:
        return defect in self.fixed
