"""The config stage: config files (Python via mmengine, YAML, JSON) -> normalized records.

>>> from prompt_compiler.config import load_config
>>> suite = load_config("configs/eval_demo.py")          # doctest: +SKIP
>>> [d.abbr for d in suite.datasets], [m.spec["parser"] for m in suite.models]  # doctest: +SKIP
"""

from __future__ import annotations

from ..model.classes import Renderer, renderer_for_model_class
from .loader import CONFIG_SUFFIXES, load_config, load_configs
from .normalize import normalize_dataset, normalize_model
from .python.shim import opencompass_shim
from .records import DatasetConfig, ModelConfig, SuiteConfig, TypeRef

__all__ = [
    "CONFIG_SUFFIXES",
    "DatasetConfig",
    "ModelConfig",
    "Renderer",
    "SuiteConfig",
    "TypeRef",
    "load_config",
    "load_configs",
    "normalize_dataset",
    "normalize_model",
    "opencompass_shim",
    "renderer_for_model_class",
]
