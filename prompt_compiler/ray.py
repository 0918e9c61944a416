"""Prompt building as a Ray Data stage (extra ``ray``): the public path of
:mod:`prompt_compiler.integrations.ray_data`, where the code and its documentation live.

::

    from prompt_compiler.ray import compile_dataset
"""

from __future__ import annotations

from .integrations.ray_data import compile_dataset, require_ray, sampling_params

__all__ = ["compile_dataset", "require_ray", "sampling_params"]
