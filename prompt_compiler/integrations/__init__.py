"""The package as a part of other systems' pipelines (the top floor: may import any stage).

* :mod:`.ray_data`: prompt building as a Ray Data stage (extra ``ray``); its public path is
  :mod:`prompt_compiler.ray`.
"""
