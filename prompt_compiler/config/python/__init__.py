"""Python configs (``.py``): read as OpenCompass reads them, as data, within bounds.

* :mod:`.load` - one config into plain data: run by :mod:`.mmengine_mode` (mmengine's
  ``Config`` modes, reproduced without mmengine), else by mmengine itself, under
  :mod:`.shim` (placeholder ``opencompass.*`` modules);
* :mod:`.mm_values` - the values mmengine hands a config (``ConfigDict``, lazy imports);
* :mod:`.check` - what a config may contain, and the rewrite it runs as;
* :mod:`.stand_ins` - the builtins it runs with;
* :mod:`.budget` - the steps, seconds, memory and value sizes it may take.
"""

from __future__ import annotations

from .load import (
    ENVIRONMENT_KEY,
    PythonConfig,
    find_package_root,
    load_python_config,
    load_variables,
    read_python_config,
    to_plain,
)

__all__ = ["ENVIRONMENT_KEY", "PythonConfig", "find_package_root", "load_python_config",
           "load_variables", "read_python_config", "to_plain"]
