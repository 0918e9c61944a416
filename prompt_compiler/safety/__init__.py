"""What keeps a run safe on any input: the ground floor every stage may import.

* :mod:`.limits`: the size limits of every input (``PROMPT_COMPILER_LIMITS``);
* :mod:`.values`: the plain values a config or a row may hold (depth, finite numbers, ints);
* :mod:`.yaml_loader`: YAML read without arbitrary objects and within the alias limit;
* :mod:`.format_guard`: ``str.format`` that fills names only (no attribute or index lookups);
* :mod:`.jinja_sandbox`: the sandboxed Jinja environment templates render in;
* :mod:`.interrupts`: stretches a stop signal must not break into.

None of these modules imports anything of the package above :mod:`prompt_compiler.errors`.
"""
