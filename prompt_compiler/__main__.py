"""``python -m prompt_compiler``: the same as the ``compile-prompts`` command."""

import sys

from .cli import main

sys.exit(main())
